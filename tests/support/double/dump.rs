//! `eqcheck-double dump [PLANTS...] TREE`: a lister's dump mode, as the probe reads
//! it (one JSON object per entry: `path` and the stat fields, from read_dir +
//! lstat), with faults planted on request so the tests can see the probe catch them:
//!
//! ```text
//! --sparse-blocks-plus-one   blocks one too many for sparse files
//! --omit FIELD,FIELD         leave these fields out of every record
//! --absolute                 paths as absolute paths, not relative to the tree
//! --drop PATH                leave this entry out
//! --bad-line N               line N is not JSON
//! --touch PATH               append a byte to this file first (the tree changes)
//! ```

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Default)]
struct Plants {
    sparse_blocks_plus_one: bool,
    omit: Vec<String>,
    absolute: bool,
    drop: Option<PathBuf>,
    bad_line: Option<usize>,
    touch: Option<PathBuf>,
}

pub fn dump(args: &[String]) -> ExitCode {
    let Some((tree, flags)) = args.split_last() else {
        eprintln!("eqcheck-double: dump [PLANTS...] TREE");
        return ExitCode::from(2);
    };
    let Some(plants) = plants(flags) else {
        eprintln!("eqcheck-double: dump: unknown plant in {flags:?}");
        return ExitCode::from(2);
    };
    let root = Path::new(tree);
    if let Some(file) = &plants.touch {
        let mut opened = std::fs::OpenOptions::new()
            .append(true)
            .open(root.join(file))
            .expect("the file to touch exists");
        opened.write_all(b"!").expect("the file takes a byte");
    }
    let mut lines = Vec::new();
    walk(root, Path::new("."), &plants, &mut lines);
    let mut out = std::io::stdout().lock();
    for (i, line) in lines.iter().enumerate() {
        let line = match plants.bad_line {
            Some(n) if n == i + 1 => "this line is not JSON".to_string(),
            _ => line.clone(),
        };
        if writeln!(out, "{line}").is_err() {
            // A reader that stopped early has what it wanted.
            return ExitCode::SUCCESS;
        }
    }
    ExitCode::SUCCESS
}

fn plants(flags: &[String]) -> Option<Plants> {
    let mut plants = Plants::default();
    let mut words = flags.iter();
    while let Some(flag) = words.next() {
        match flag.as_str() {
            "--sparse-blocks-plus-one" => plants.sparse_blocks_plus_one = true,
            "--absolute" => plants.absolute = true,
            "--omit" => plants.omit = words.next()?.split(',').map(String::from).collect(),
            "--drop" => plants.drop = Some(PathBuf::from(words.next()?)),
            "--bad-line" => plants.bad_line = Some(words.next()?.parse().ok()?),
            "--touch" => plants.touch = Some(PathBuf::from(words.next()?)),
            _ => return None,
        }
    }
    Some(plants)
}

/// Records of `relative` and, for a folder, everything below it, depth first.
fn walk(root: &Path, relative: &Path, plants: &Plants, lines: &mut Vec<String>) {
    let path = root.join(relative);
    let Ok(meta) = std::fs::symlink_metadata(&path) else {
        return;
    };
    if plants.drop.as_deref() != Some(relative) {
        lines.push(record(root, relative, &meta, plants));
    }
    if meta.is_dir() {
        let Ok(children) = std::fs::read_dir(&path) else {
            return;
        };
        for child in children.flatten() {
            let name = child.file_name();
            let below = if relative == Path::new(".") {
                PathBuf::from(name)
            } else {
                relative.join(name)
            };
            walk(root, &below, plants, lines);
        }
    }
}

fn record(root: &Path, relative: &Path, meta: &std::fs::Metadata, plants: &Plants) -> String {
    let sparse = meta.is_file() && meta.blocks() * 512 < meta.size();
    let blocks = meta.blocks() + u64::from(plants.sparse_blocks_plus_one && sparse);
    let time = |secs: i64, nanos: i64| serde_json::json!({"secs": secs, "nanos": nanos});
    let path = match plants.absolute {
        true => root.join(relative),
        false => relative.to_path_buf(),
    };
    let mut fields = serde_json::json!({
        "type": kind(meta.file_type()),
        "mode": meta.mode(),
        "size": meta.size(),
        "blocks": blocks,
        "block_size": meta.blksize(),
        "inode": meta.ino(),
        "device": meta.dev(),
        "nlink": meta.nlink(),
        "uid": meta.uid(),
        "gid": meta.gid(),
        "atime": time(meta.atime(), meta.atime_nsec()),
        "mtime": time(meta.mtime(), meta.mtime_nsec()),
        "ctime": time(meta.ctime(), meta.ctime_nsec()),
    });
    let map = fields.as_object_mut().expect("an object");
    // A name that is not UTF-8 goes as its bytes.
    match path.to_str() {
        Some(text) => map.insert("path".into(), text.into()),
        None => {
            use std::os::unix::ffi::OsStrExt;
            map.insert("path_bytes".into(), path.as_os_str().as_bytes().into())
        }
    };
    for omitted in &plants.omit {
        map.remove(omitted);
    }
    fields.to_string()
}

fn kind(file_type: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    match () {
        _ if file_type.is_dir() => "dir",
        _ if file_type.is_file() => "file",
        _ if file_type.is_symlink() => "symlink",
        _ if file_type.is_fifo() => "fifo",
        _ if file_type.is_socket() => "socket",
        _ if file_type.is_block_device() => "block_device",
        _ => "char_device",
    }
}
