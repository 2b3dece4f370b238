//! Probing any lister: a third-party walker's dump mode prints one JSON object per
//! entry (NDJSON), with `path` and any subset of the fields, and the probe compares
//! those with what read_dir + lstat say. The format is in `docs/probe.md`:
//!
//! ```text
//! {"path":"src/main.rs","type":"file","size":1200,"blocks":8,"inode":1234,
//!  "mtime":{"secs":1700000000,"nanos":5}}
//! {"path_bytes":[110,97,109,101,255],"type":"file"}
//! ```
//!
//! A name that is not UTF-8 is given as `path_bytes`, its bytes, instead of `path`.
//!
//! A field a record leaves out is unknown. A key the format does not have, a value
//! of the wrong kind or a line that is not one JSON object is an error naming the
//! line, never a silently unknown field.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::{Component, Path, PathBuf};

use serde::Deserialize;

use super::record::{FieldName, Known, Record, Value};
use crate::flagset::command_with_tree;
use crate::matrix::exec::{self, ArmEnvironment};
use crate::matrix::{arm, keeper};
use crate::outcome::ArmStatus;
use crate::walk::stat::{Source, Timestamp};
use crate::walk::FileKind;

/// Why a lister's records could not be had: the probe then ends in an error.
#[derive(Debug, thiserror::Error)]
pub enum ListerError {
    #[error("cannot run the lister `{command}`")]
    Setup { command: String, source: io::Error },
    #[error("the lister `{command}` {how}; {said}")]
    Failed {
        command: String,
        /// How it ended, in the words an arm's status is given in.
        how: String,
        /// `its stderr: …`, or that it was empty.
        said: String,
    },
    #[error("cannot read the lister's output")]
    Read(#[source] io::Error),
    #[error("the lister's line {line}: {message}")]
    Line { line: usize, message: String },
}

/// One line of the dump, as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    /// The path, when it is UTF-8 ...
    path: Option<String>,
    /// ... or its bytes, for a name that is not.
    path_bytes: Option<Vec<u8>>,
    #[serde(rename = "type")]
    kind: Option<FileKind>,
    mode: Option<u64>,
    size: Option<u64>,
    blocks: Option<u64>,
    block_size: Option<u64>,
    inode: Option<u64>,
    device: Option<u64>,
    nlink: Option<u64>,
    uid: Option<u64>,
    gid: Option<u64>,
    atime: Option<Time>,
    mtime: Option<Time>,
    ctime: Option<Time>,
    btime: Option<Time>,
}

/// A time as the dump writes it; nothing else may stand in the object.
#[derive(Deserialize, Clone, Copy)]
#[serde(deny_unknown_fields)]
struct Time {
    secs: i64,
    nanos: u32,
}

/// Runs the lister on the tree at `root` and reads its records. `command` is split
/// already; `{tree}` in it is replaced by the root, or the root is appended. It
/// runs as an arm does, through a keeper, in `env`: in a folder of its own in
/// `scratch` (never the tree), killed with all it started at the timeout, and
/// whatever it leaves running ended before its records are read. Its output goes
/// to a file in `scratch`, never wholly into memory as text.
pub fn run(
    command: &[String],
    env: &ArmEnvironment,
    root: &Path,
    scratch: &Path,
) -> Result<Vec<Record>, ListerError> {
    let shown = shell_words::join(command);
    let setup = |source| ListerError::Setup {
        command: shown.clone(),
        source,
    };
    let home = scratch.join("lister-home");
    std::fs::create_dir_all(&home).map_err(setup)?;
    // The root is whole (a folder given is resolved so), wherever the lister starts.
    let argv = command_with_tree(command, root);
    let (stdout, stderr) = (scratch.join("lister.ndjson"), scratch.join("lister.err"));
    let argv0 = arm::file_name(&command[0]);
    let request = exec::request(&argv, &argv0, env, home, &stdout, &stderr);
    let launcher = keeper::Launcher::start().map_err(setup)?;
    let cost = launcher.run(&request, &env.user);
    launcher.close();
    if !cost.status.succeeded() {
        let stderr = std::fs::read(&stderr).unwrap_or_default();
        let stderr = String::from_utf8_lossy(&stderr);
        return Err(ListerError::Failed {
            command: shown,
            how: match cost.status {
                ArmStatus::Exited { code } => format!("exited with {code}"),
                other => other.describe(),
            },
            said: match stderr.trim_end() {
                _ if stderr.is_empty() => "its stderr was empty".into(),
                "" => "its stderr held only white space".into(),
                said => format!("its stderr: {said}"),
            },
        });
    }
    let file = File::open(&stdout).map_err(ListerError::Read)?;
    read(BufReader::new(file), root)
}

/// Reads a dump: one record per non-empty line.
pub fn read(input: impl BufRead, root: &Path) -> Result<Vec<Record>, ListerError> {
    let mut records = Vec::new();
    let mut seen = std::collections::HashMap::new();
    for (index, line) in input.split(b'\n').enumerate() {
        let line = line.map_err(ListerError::Read)?;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let at = |message: String| ListerError::Line {
            line: index + 1,
            message,
        };
        let parsed: Line = serde_json::from_slice(&line).map_err(|e| at(e.to_string()))?;
        let written = match (&parsed.path, &parsed.path_bytes) {
            (Some(path), None) => PathBuf::from(path),
            (None, Some(bytes)) => path_of_bytes(bytes),
            _ => return Err(at("give `path` or `path_bytes`, one of them".into())),
        };
        let path = inside(&written, root).map_err(at)?;
        if let Some(first) = seen.insert(path.clone(), index + 1) {
            return Err(at(format!(
                "`{}` was given on line {first} already",
                path.display()
            )));
        }
        records.push(record(parsed, path).map_err(at)?);
    }
    Ok(records)
}

#[cfg(unix)]
fn path_of_bytes(bytes: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    PathBuf::from(std::ffi::OsStr::from_bytes(bytes))
}

/// Elsewhere names are Unicode: bytes are read as UTF-8, lossily.
#[cfg(not(unix))]
fn path_of_bytes(bytes: &[u8]) -> PathBuf {
    PathBuf::from(String::from_utf8_lossy(bytes).into_owned())
}

/// A record's path as a path inside the tree: absolute ones must lie in it.
fn inside(path: &Path, root: &Path) -> Result<PathBuf, String> {
    let written = path.display();
    let relative = match path.strip_prefix(root) {
        Ok(inside) => inside,
        Err(_) if path.is_absolute() => {
            return Err(format!(
                "`{written}` is not inside the tree {}",
                root.display()
            ))
        }
        Err(_) => path,
    };
    let normal: PathBuf = (relative.components())
        .filter(|c| *c != Component::CurDir)
        .collect();
    if normal.components().any(|c| c == Component::ParentDir) {
        return Err(format!("`{written}` climbs out with `..`"));
    }
    Ok(match normal.as_os_str().is_empty() {
        true => PathBuf::from("."),
        false => normal,
    })
}

fn record(line: Line, path: PathBuf) -> Result<Record, String> {
    let mut known = Vec::new();
    let mut push = |field, value: Option<Value>| {
        if let Some(value) = value {
            known.push(Known {
                field,
                source: Source::Lister,
                value,
            });
        }
    };
    push(FieldName::Type, line.kind.map(Value::Kind));
    let numbers = [
        (FieldName::Mode, line.mode),
        (FieldName::Size, line.size),
        (FieldName::Blocks, line.blocks),
        (FieldName::BlockSize, line.block_size),
        (FieldName::Inode, line.inode),
        (FieldName::Device, line.device),
        (FieldName::Nlink, line.nlink),
        (FieldName::Uid, line.uid),
        (FieldName::Gid, line.gid),
    ];
    for (field, value) in numbers {
        push(field, value.map(Value::Number));
    }
    let times = [
        (FieldName::Atime, line.atime),
        (FieldName::Mtime, line.mtime),
        (FieldName::Ctime, line.ctime),
        (FieldName::Btime, line.btime),
    ];
    for (field, value) in times {
        let Some(time) = value else { continue };
        if time.nanos >= 1_000_000_000 {
            return Err(format!(
                "`{}`: nanos {} is a second or more",
                field.name(),
                time.nanos
            ));
        }
        let stamp = Timestamp {
            secs: time.secs,
            nanos: time.nanos,
        };
        push(field, Some(Value::Time(stamp)));
    }
    Ok(Record {
        path,
        known,
        stat_failed: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<Vec<Record>, String> {
        read(text.as_bytes(), Path::new("/t/web")).map_err(|e| e.to_string())
    }

    #[test]
    fn records_take_only_the_fields_written() {
        let text = "{\"path\":\"/t/web/a\",\"type\":\"file\",\"size\":3}\n\n{\"path\":\".\"}\n";
        let records = parsed(text).unwrap();
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].path, Path::new("a"));
        let fields: Vec<FieldName> = records[0].known.iter().map(|k| k.field).collect();
        assert_eq!(fields, [FieldName::Type, FieldName::Size]);
        assert_eq!(records[1].path, Path::new("."));
        assert!(records[1].known.is_empty());
    }

    #[test]
    fn a_bad_line_is_named_by_its_number() {
        let bad = [
            ("{\"path\":\"a\"}\nnot json\n", "the lister's line 2: "),
            (
                "{\"path\":\"a\",\"colour\":1}\n",
                "the lister's line 1: unknown field `colour`",
            ),
            (
                "{\"path\":\"a\",\"size\":\"big\"}\n",
                "the lister's line 1: invalid type",
            ),
            (
                "{\"path\":\"/elsewhere/a\"}\n",
                "the lister's line 1: `/elsewhere/a` is not inside",
            ),
            (
                "{\"path\":\"../a\"}\n",
                "the lister's line 1: `../a` climbs out",
            ),
        ];
        for (text, expected) in bad {
            let message = parsed(text).unwrap_err();
            assert!(message.starts_with(expected), "{text:?}: {message}");
        }
    }

    #[test]
    fn the_tree_goes_where_the_command_places_it_or_last() {
        let root = Path::new("/t/web");
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            command_with_tree(&words(&["dump", "--root={tree}"]), root),
            ["dump", "--root=/t/web"]
        );
        assert_eq!(
            command_with_tree(&words(&["dump", "-a"]), root),
            ["dump", "-a", "/t/web"]
        );
    }
}
