//! Where one report goes: stdout for `-`, else a file that is only replaced once the
//! report is complete. A report file is written in a staging folder beside it and
//! renamed over its path at the end, so a run that stops early (Ctrl-C, SIGTERM, a
//! harness failure, a failed write) leaves an earlier report at that path as it was,
//! and a reader never sees half a report. The staging folder is made before the run,
//! so a path whose folder cannot be written is still refused before any arm runs,
//! and it is registered with the fixtures' cleanup, which removes it on an interrupt;
//! any other early end removes it when the destination is dropped.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::cleanup;

/// An open report destination.
pub enum Destination {
    Stdout(io::Stdout),
    /// Written where it is, as it goes: a path that is not a regular file (a device
    /// such as `/dev/null`, a FIFO, a symlink, which may lead to the stream a shell
    /// redirected). Renaming over it would replace the device or the link itself.
    InPlace(BufWriter<File>),
    Staged(Staged),
}

/// A report written in a staging folder, to be renamed over `path` when complete.
pub struct Staged {
    path: PathBuf,
    folder: PathBuf,
    staged: PathBuf,
    out: BufWriter<File>,
}

impl Destination {
    /// Opens a destination before the run: `-` is stdout; anything else must be
    /// writable now.
    pub fn open(path: &Path) -> io::Result<Destination> {
        if super::is_stdout(path) {
            return Ok(Destination::Stdout(io::stdout()));
        }
        // `DIR/` names no file: creating it fails, as it always did.
        let names_a_file = !path
            .as_os_str()
            .to_string_lossy()
            .ends_with(std::path::is_separator);
        match fs::symlink_metadata(path) {
            _ if !names_a_file => {}
            Ok(meta) if meta.is_file() => {
                return Staged::beside(path, Some(meta.permissions())).map(Destination::Staged)
            }
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                return Staged::beside(path, None).map(Destination::Staged)
            }
            Ok(meta) if meta.file_type().is_symlink() => planted_link(path, &meta)?,
            _ => {}
        }
        Ok(Destination::InPlace(BufWriter::new(File::create(path)?)))
    }

    /// Where the report is written.
    pub fn writer(&mut self) -> &mut dyn Write {
        match self {
            Destination::Stdout(out) => out,
            Destination::InPlace(out) => out,
            Destination::Staged(staged) => &mut staged.out,
        }
    }

    /// Ends a report that was written completely: flushes it and, for a staged
    /// file, puts it at its path.
    pub fn finish(self) -> io::Result<()> {
        match self {
            Destination::Stdout(mut out) => out.flush(),
            Destination::InPlace(mut out) => out.flush(),
            Destination::Staged(staged) => staged.finish(),
        }
    }
}

impl Staged {
    /// Stages a report for `path`; `existing` is the permissions of the file there,
    /// which the report keeps, as a file truncated and rewritten would.
    fn beside(path: &Path, existing: Option<fs::Permissions>) -> io::Result<Staged> {
        if existing.is_some() {
            // Renaming needs only the folder to be writable: a file its owner made
            // read-only is refused as writing it in place would refuse it.
            File::options().write(true).open(path)?;
        }
        let name = path
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file name"))?;
        let folder = staging_folder(path.parent().unwrap_or(Path::new("")))?;
        if !cleanup::register_folder(&folder) {
            let interrupted = io::Error::new(io::ErrorKind::Interrupted, "interrupted");
            return Err(interrupted);
        }
        // Registered before the handler exists, the folder would be left behind by
        // an interrupt that came before the run installs it.
        cleanup::on_interrupt_clean_up();
        let staged = folder.join(name);
        let opened = File::create(&staged).and_then(|file| {
            if let Some(permissions) = existing {
                file.set_permissions(permissions)?;
            }
            Ok(file)
        });
        let file = match opened {
            Ok(file) => file,
            Err(err) => {
                let _ = cleanup::remove_registered_folder(&folder);
                return Err(err);
            }
        };
        Ok(Staged {
            path: path.to_path_buf(),
            folder,
            staged,
            out: BufWriter::new(file),
        })
    }

    fn finish(mut self) -> io::Result<()> {
        self.out.flush()?;
        fs::rename(&self.staged, &self.path)
        // Dropping `self` removes the staging folder, empty by now.
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        let _ = cleanup::remove_registered_folder(&self.folder);
    }
}

/// Refuses a symlink that another user owns in a world-writable sticky folder
/// (`/tmp`): whoever planted it chose what the report would overwrite. This is
/// the kernel's `protected_symlinks` rule, applied whatever the sysctl says.
#[cfg(unix)]
fn planted_link(path: &Path, link: &fs::Metadata) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let parent = match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(parent) => parent,
        None => Path::new("."),
    };
    let folder = fs::metadata(parent)?;
    let sticky_and_open = folder.mode() & 0o1002 == 0o1002;
    let me = rustix::process::geteuid().as_raw();
    if sticky_and_open && link.uid() != me && link.uid() != folder.uid() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "a symlink owned by uid {} in the world-writable sticky folder {}: not followed (another user chose where it leads)",
                link.uid(),
                parent.display()
            ),
        ));
    }
    Ok(())
}

#[cfg(not(unix))]
fn planted_link(_path: &Path, _link: &fs::Metadata) -> io::Result<()> {
    Ok(())
}

/// Makes a new hidden folder in `parent` (the working folder when empty). Named by
/// process and count rather than at random: unique among running eqchecks, and one
/// left by a killed process is stepped over.
fn staging_folder(parent: &Path) -> io::Result<PathBuf> {
    static MADE: AtomicUsize = AtomicUsize::new(0);
    let parent = if parent.as_os_str().is_empty() {
        Path::new(".")
    } else {
        parent
    };
    loop {
        let count = MADE.fetch_add(1, Ordering::Relaxed);
        let name = format!(".eqcheck-report-{}-{count}", std::process::id());
        let folder = parent.join(name);
        match fs::create_dir(&folder) {
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => continue,
            made => return made.map(|()| folder),
        }
    }
}
