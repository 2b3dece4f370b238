//! macOS: file-system images made and attached with `hdiutil`, the three file
//! systems a Mac walker meets (APFS, HFS+ and exFAT). Each image is a sparse
//! image in the tree's image folder, attached at a mount point inside it with
//! `-nobrowse` (Finder and Spotlight leave it alone) and `-owners on` (the
//! spec's owners and modes hold), and detached when dropped or on an interrupt.
//! No privileges and no namespace are needed: the image is the user's own, and a
//! crash leaves it attached until `trees unmount` or `hdiutil detach`.

use std::ffi::OsString;
use std::path::Path;

use super::{build_at, image_bytes, run_tool, FileSystem, FsError, OnImage, MARKER};
use crate::cleanup;
use crate::fixtures::{room::Footprint, Skipped, TreeSpec};

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

/// Detaches the image at `point`, forcing it when a process that was just
/// killed still holds it.
fn detach(point: &Path) -> Result<(), String> {
    let quietly: Vec<OsString> = vec!["detach".into(), "-quiet".into(), point.into()];
    if hdiutil(FileSystem::Native, &quietly).is_ok() {
        return Ok(());
    }
    let forced: Vec<OsString> = vec!["detach".into(), "-force".into(), point.into()];
    hdiutil(FileSystem::Native, &forced).map_err(|err| match err {
        FsError::Step { detail, .. } => detail,
        other => other.to_string(),
    })
}

fn hdiutil(fs: FileSystem, args: &[OsString]) -> Result<(), FsError> {
    run_tool(fs, Path::new(HDIUTIL), args)
}

/// Makes `m`'s image, attaches it and builds `spec` at its root.
pub fn fill(
    m: &mut OnImage,
    spec: &TreeSpec,
    footprint: Footprint,
) -> Result<Vec<Skipped>, FsError> {
    // `hdiutil create` names a sparse image `NAME.sparseimage`.
    let image = m.dir.join("image");
    // `k` is KiB; a bare number would be read in another unit.
    let kib = format!("{}k", image_bytes(footprint) / 1024);
    let create: Vec<OsString> = [
        "create",
        "-quiet",
        "-size",
        &kib,
        "-fs",
        hdiutil_name(m.fs),
        "-volname",
        "eqcheck",
        "-type",
        "SPARSE",
    ]
    .into_iter()
    .map(OsString::from)
    .chain([image.clone().into_os_string()])
    .collect();
    hdiutil(m.fs, &create)?;
    let point = m.mount_point.clone();
    std::fs::create_dir(&point).map_err(|err| m.step("making the mount point", err))?;
    let attach: Vec<OsString> = vec![
        "attach".into(),
        "-quiet".into(),
        "-nobrowse".into(),
        "-noautoopen".into(),
        "-owners".into(),
        "on".into(),
        "-mountpoint".into(),
        point.clone().into_os_string(),
        image.with_extension("sparseimage").into_os_string(),
    ];
    hdiutil(m.fs, &attach)?;
    m.mounted(&point);
    build_at(&m.root.clone(), spec, m.fs)
}

/// The command an interrupt runs to undo an attach.
pub fn undo_argv(point: &Path) -> Vec<OsString> {
    vec![
        HDIUTIL.into(),
        "detach".into(),
        "-force".into(),
        point.as_os_str().to_owned(),
    ]
}

/// Detaches the image attached at `point`; `Err` is what `hdiutil` said.
pub fn unmount(point: &Path) -> Result<(), String> {
    detach(point)
}

pub fn unmount_kept(dir: &Path) -> Result<(), FsError> {
    let not_ours = || FsError::NotAnImage {
        dir: dir.to_path_buf(),
    };
    let marker = std::fs::read_to_string(dir.join(MARKER)).map_err(|_| not_ours())?;
    let fs = FileSystem::named(marker.trim()).ok_or_else(not_ours)?;
    let point = dir.join("mnt");
    if is_mount_point(&point) {
        detach(&point).map_err(|detail| FsError::Step {
            fs,
            doing: format!("detaching {}", point.display()),
            detail,
        })?;
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
