//! macOS: file-system images made and attached with `hdiutil`, the three file
//! systems a Mac walker meets (APFS, HFS+ and exFAT). Each image is a sparse
//! image in the tree's image folder, attached at a mount point inside it with
//! `-nobrowse` (Finder and Spotlight leave it alone) and `-owners on` (the
//! spec's owners and modes hold), and detached when dropped or on an interrupt.
//! No privileges and no namespace are needed: the image is the user's own, and a
//! crash leaves it attached until `trees unmount` or `hdiutil detach`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{build_at, image_bytes, interrupted, make_own_folder, FileSystem, FsError, MARKER};
use crate::cleanup;
use crate::fixtures::{self, Skipped, TreeSpec};

const HDIUTIL: &str = "/usr/bin/hdiutil";

pub fn images_refused() -> Option<String> {
    match Path::new(HDIUTIL).is_file() {
        true => None,
        false => Some(format!("images are made with {HDIUTIL}, which is missing")),
    }
}

/// Every macOS file system `hdiutil` makes is there when `hdiutil` is.
pub fn unavailable(_fs: FileSystem) -> Option<String> {
    images_refused()
}

/// Nothing to enter: an attached image shows in the system's mount table, and
/// is detached by whoever attached it.
pub fn enter_private_namespace() -> Result<(), FsError> {
    Ok(())
}

/// The `-fs` name `hdiutil create` takes.
fn hdiutil_name(fs: FileSystem) -> &'static str {
    match fs {
        FileSystem::Apfs => "APFS",
        FileSystem::Hfsplus => "HFS+",
        _ => "ExFAT",
    }
}

/// A tree on an attached image, and what must be undone for it.
#[derive(Debug)]
pub struct Mounted {
    fs: FileSystem,
    dir: PathBuf,
    mount_point: PathBuf,
    root: PathBuf,
    attached: bool,
    /// The cleanup's undo id of the detach.
    undo: Option<u64>,
    keep: bool,
}

impl Mounted {
    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn mount_point(&self) -> &Path {
        &self.mount_point
    }

    pub fn file_system(&self) -> FileSystem {
        self.fs
    }

    pub fn keep(&mut self) {
        self.keep = true;
        if let Some(id) = self.undo.take() {
            cleanup::forget_undo(id);
        }
        cleanup::forget_folder(&self.dir);
    }

    pub fn take_down(mut self) -> Result<(), FsError> {
        self.keep = true;
        self.undo_all()
    }

    fn undo_all(&mut self) -> Result<(), FsError> {
        if let Some(id) = self.undo.take() {
            cleanup::forget_undo(id);
        }
        if self.attached {
            detach(self.fs, &self.mount_point)?;
            self.attached = false;
        }
        cleanup::remove_registered_folder(&self.dir).map_err(|err| self.step("removing", err))
    }

    fn step(&self, doing: &str, err: std::io::Error) -> FsError {
        FsError::Step {
            fs: self.fs,
            doing: format!("{doing} {}", self.dir.display()),
            detail: err.to_string(),
        }
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if !self.keep {
            if let Err(err) = self.undo_all() {
                eprintln!("eqcheck: {err}");
            }
        }
    }
}

/// Detaches the image at `point`, forcing it when a process that was just
/// killed still holds it.
fn detach(fs: FileSystem, point: &Path) -> Result<(), FsError> {
    let quietly: Vec<OsString> = vec!["detach".into(), "-quiet".into(), point.into()];
    if hdiutil(fs, &quietly).is_ok() {
        return Ok(());
    }
    let forced: Vec<OsString> = vec!["detach".into(), "-force".into(), point.into()];
    hdiutil(fs, &forced)
}

/// Runs `hdiutil` to its end; `Err` carries the last line it said.
fn hdiutil(fs: FileSystem, args: &[OsString]) -> Result<(), FsError> {
    let failed = |detail: String| FsError::Step {
        fs,
        doing: "hdiutil".into(),
        detail,
    };
    let output = Command::new(HDIUTIL)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|err| failed(err.to_string()))?;
    if output.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&output.stderr);
    let last = said.lines().rfind(|l| !l.trim().is_empty());
    Err(failed(format!(
        "{}: {}",
        output.status,
        last.unwrap_or("(it said nothing)")
    )))
}

pub fn build(
    fs: FileSystem,
    spec: &TreeSpec,
    dir: &Path,
) -> Result<(Mounted, Vec<Skipped>), FsError> {
    if let Some(reason) = super::unavailable(fs) {
        return Err(FsError::Unavailable { fs, reason });
    }
    let footprint = fixtures::footprint(spec)?;
    make_own_folder(dir, spec)?;
    let mut mounted = Mounted {
        fs,
        dir: dir.to_path_buf(),
        mount_point: dir.join("mnt"),
        root: dir.join("mnt").join("tree"),
        attached: false,
        undo: None,
        keep: false,
    };
    if !cleanup::register_folder(dir) {
        return Err(mounted.step("registering", interrupted()));
    }
    std::fs::write(dir.join(MARKER), format!("{fs}\n"))
        .map_err(|err| mounted.step("marking", err))?;
    // `hdiutil create` names a sparse image `NAME.sparseimage`.
    let image = dir.join("image");
    let kib = (image_bytes(fs, footprint) / 1024).to_string();
    let create: Vec<OsString> = [
        "create",
        "-quiet",
        "-size",
        &kib,
        "-fs",
        hdiutil_name(fs),
        "-volname",
        "eqcheck",
        "-type",
        "SPARSE",
    ]
    .into_iter()
    .map(OsString::from)
    .chain([image.clone().into_os_string()])
    .collect();
    hdiutil(fs, &create)?;
    std::fs::create_dir(&mounted.mount_point).map_err(|err| mounted.step("making mnt in", err))?;
    let attach: Vec<OsString> = vec![
        "attach".into(),
        "-quiet".into(),
        "-nobrowse".into(),
        "-noautoopen".into(),
        "-owners".into(),
        "on".into(),
        "-mountpoint".into(),
        mounted.mount_point.clone().into_os_string(),
        image.with_extension("sparseimage").into_os_string(),
    ];
    hdiutil(fs, &attach)?;
    mounted.attached = true;
    let undo = vec![
        HDIUTIL.into(),
        "detach".into(),
        "-force".into(),
        mounted.mount_point.clone().into_os_string(),
    ];
    mounted.undo = cleanup::register_undo(dir, undo);
    let skipped = build_at(&mounted.root.clone(), spec, fs)?;
    Ok((mounted, skipped))
}

pub fn unmount_kept(dir: &Path) -> Result<(), FsError> {
    let not_ours = || FsError::NotAnImage {
        dir: dir.to_path_buf(),
    };
    let marker = std::fs::read_to_string(dir.join(MARKER)).map_err(|_| not_ours())?;
    let fs = FileSystem::named(marker.trim()).ok_or_else(not_ours)?;
    let point = dir.join("mnt");
    if is_mount_point(&point) {
        detach(fs, &point)?;
    }
    cleanup::remove_tree(dir).map_err(|err| FsError::Step {
        fs,
        doing: format!("removing {}", dir.display()),
        detail: err.to_string(),
    })
}

/// A folder on another device than its parent is something's mount point.
fn is_mount_point(point: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let device = |p: &Path| std::fs::metadata(p).map(|m| m.dev()).ok();
    match (device(point), point.parent().and_then(device)) {
        (Some(inner), Some(outer)) => inner != outer,
        _ => false,
    }
}
