//! File systems as a matrix dimension: which file systems a tree can be built on
//! (`--fs`), whether this machine can make each one, and a tree built onto a fresh
//! image of one, mounted, and taken down again (unmounted, its loop device
//! detached, its image removed) when dropped or on an interrupt. `native` is the
//! temp folder's own file system, as a run without `--fs` uses. Images need Linux
//! and root (loop devices, FUSE, a private mount namespace), or macOS (`hdiutil`
//! disk images, any user); everywhere else only `native` exists.

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
use linux as os;

#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "macos")]
use macos as os;

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod unsupported;
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
use unsupported as os;

use std::fmt;
use std::path::{Path, PathBuf};

#[cfg(unix)]
use crate::fixtures::{self, room::Footprint, FixtureError};
use crate::fixtures::{Holds, Skipped, TreeSpec};
#[cfg(unix)]
use std::io;

/// A file system a tree can be built on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FileSystem {
    /// The temp folder's own file system: no image.
    Native,
    Ext4,
    /// ext2 made without the `filetype` feature: every entry lists as DT_UNKNOWN.
    Ext2NoDtype,
    Xfs,
    Btrfs,
    Tmpfs,
    /// The tree in an overlay's lower layer, read through the overlay, where an
    /// entry's `d_ino` need not be its `st_ino`.
    Overlay,
    /// Read-only, built from a staged copy.
    Squashfs,
    /// Through FUSE on a loop device (Linux), or an `hdiutil` image (macOS).
    Exfat,
    /// FAT32, through the kernel's driver.
    Vfat,
    /// macOS: an `hdiutil` image of APFS, case-insensitive as macOS makes it.
    Apfs,
    /// macOS: an `hdiutil` image of journaled HFS+, case-insensitive.
    Hfsplus,
}

impl FileSystem {
    /// Every file system, in the order `all` runs them (those of this platform).
    pub const ALL: [FileSystem; 12] = [
        FileSystem::Native,
        FileSystem::Ext4,
        FileSystem::Ext2NoDtype,
        FileSystem::Xfs,
        FileSystem::Btrfs,
        FileSystem::Tmpfs,
        FileSystem::Overlay,
        FileSystem::Squashfs,
        FileSystem::Exfat,
        FileSystem::Vfat,
        FileSystem::Apfs,
        FileSystem::Hfsplus,
    ];

    /// The name `--fs` takes and reports and case ids show.
    pub fn name(self) -> &'static str {
        match self {
            FileSystem::Native => "native",
            FileSystem::Ext4 => "ext4",
            FileSystem::Ext2NoDtype => "ext2-nodtype",
            FileSystem::Xfs => "xfs",
            FileSystem::Btrfs => "btrfs",
            FileSystem::Tmpfs => "tmpfs",
            FileSystem::Overlay => "overlay",
            FileSystem::Squashfs => "squashfs",
            FileSystem::Exfat => "exfat",
            FileSystem::Vfat => "vfat",
            FileSystem::Apfs => "apfs",
            FileSystem::Hfsplus => "hfsplus",
        }
    }

    /// The file system a name stands for.
    pub fn named(name: &str) -> Option<FileSystem> {
        FileSystem::ALL.into_iter().find(|fs| fs.name() == name)
    }

    /// Whether this platform makes it at all: the Linux file systems on Linux,
    /// APFS and HFS+ on macOS (exFAT and `native` on both).
    pub fn of_this_platform(self) -> bool {
        let macos_only = matches!(self, FileSystem::Apfs | FileSystem::Hfsplus);
        match self {
            FileSystem::Native | FileSystem::Exfat => true,
            _ if cfg!(target_os = "macos") => macos_only,
            _ => !macos_only,
        }
    }

    /// Whether the tree is built onto an image (or a mount) of its own.
    pub fn is_image(self) -> bool {
        self != FileSystem::Native
    }

    /// What a tree built on it must leave out (FAT and exFAT); other file systems
    /// say what they refuse when asked.
    pub fn holds(self) -> Holds {
        match self {
            FileSystem::Exfat => Holds::fat_like("exfat"),
            FileSystem::Vfat => Holds::fat_like("vfat"),
            FileSystem::Apfs => Holds::case_folding("apfs"),
            FileSystem::Hfsplus => Holds::case_folding("hfsplus"),
            _ => Holds::EVERYTHING,
        }
    }

    /// What the file system is, for `--help` and the error for an unknown name.
    pub fn names() -> String {
        let mut names: Vec<&str> = FileSystem::ALL.iter().map(|fs| fs.name()).collect();
        names.push("all");
        names.join(", ")
    }
}

impl fmt::Display for FileSystem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A comma-separated `--fs` list (or one word of it), `all` standing for every
/// file system; repeats are dropped and the order given is kept. `Err` says which
/// word is unknown.
pub fn parse_list(list: &str) -> Result<Vec<FileSystem>, String> {
    let mut chosen = Vec::new();
    for word in list.split(',').map(str::trim) {
        let more: Vec<FileSystem> = match word {
            "all" => (FileSystem::ALL.into_iter())
                .filter(|fs| fs.of_this_platform())
                .collect(),
            _ => match FileSystem::named(word) {
                Some(fs) => vec![fs],
                None => {
                    return Err(format!(
                        "unknown file system `{word}` (known: {})",
                        FileSystem::names()
                    ))
                }
            },
        };
        for fs in more {
            if !chosen.contains(&fs) {
                chosen.push(fs);
            }
        }
    }
    Ok(chosen)
}

/// Why images cannot be made here at all: the same for every file system but
/// `native`.
pub fn images_refused() -> Option<String> {
    os::images_refused()
}

/// Why this machine cannot make `fs` (a missing tool or kernel driver), or `None`
/// when it can. Asks nothing of the privileges `images_refused` covers.
pub fn unavailable(fs: FileSystem) -> Option<String> {
    match fs {
        FileSystem::Native => None,
        _ if !fs.of_this_platform() => Some(match fs {
            FileSystem::Apfs | FileSystem::Hfsplus => {
                "made with macOS's hdiutil: macOS only".into()
            }
            _ => "a Linux file system: made on Linux only".into(),
        }),
        _ => os::unavailable(fs),
    }
}

/// Makes this process's mounts private to it (and to the processes it starts), so
/// that no image it mounts shows in the host's mount table and every mount goes
/// when the last of them exits. Must be called while the process has one thread.
pub fn enter_private_namespace() -> Result<(), FsError> {
    os::enter_private_namespace()
}

/// Why a tree could not be put on an image.
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    #[error("--fs {fs}: {reason}")]
    Unavailable { fs: FileSystem, reason: String },
    #[error("--fs {fs}: {doing} failed: {detail}")]
    Step {
        fs: FileSystem,
        doing: String,
        detail: String,
    },
    #[error("cannot make a private mount namespace for the file-system images: {0}")]
    Namespace(std::io::Error),
    #[error(transparent)]
    Fixture(#[from] crate::fixtures::FixtureError),
    #[error("{} was not made by `eqcheck trees build --fs` (no {} in it)", dir.display(), MARKER)]
    NotAnImage { dir: PathBuf },
}

impl FsError {
    /// Whether what the user asked for is wrong (exit 2) rather than the machine
    /// failing at it (exit 3).
    pub fn is_usage(&self) -> bool {
        match self {
            FsError::Unavailable { .. } | FsError::NotAnImage { .. } => true,
            FsError::Fixture(err) => err.is_usage(),
            FsError::Step { .. } | FsError::Namespace(_) => false,
        }
    }
}

/// The file in an image folder that says which file system it holds, so that
/// `trees unmount` only ever undoes what `trees build --fs` made.
pub const MARKER: &str = "eqcheck-image";

/// A tree built onto a file system of its own: the image, its mounts and the
/// folder that holds them, all undone when dropped unless kept.
#[derive(Debug)]
pub struct OnImage {
    fs: FileSystem,
    /// Holds the image, the mount point and any staging folders.
    dir: PathBuf,
    mount_point: PathBuf,
    root: PathBuf,
    skipped: Vec<Skipped>,
    /// Mount points in the order they were mounted; taken down in reverse.
    mounts: Vec<PathBuf>,
    /// The cleanup's undo ids of those mounts.
    undo: Vec<u64>,
    keep: bool,
}

impl OnImage {
    /// Builds `spec` onto a fresh `fs` in `dir`, which must not exist yet: the
    /// image file, the staging folders it needs and the mount point all go there,
    /// and the tree's root is a folder inside the mount. Everything made is
    /// registered to be undone on an interrupt.
    pub fn build(fs: FileSystem, spec: &TreeSpec, dir: &Path) -> Result<OnImage, FsError> {
        if let Some(reason) = images_refused().or_else(|| unavailable(fs)) {
            return Err(FsError::Unavailable { fs, reason });
        }
        Self::make(fs, spec, dir)
    }

    #[cfg(not(unix))]
    fn make(fs: FileSystem, _spec: &TreeSpec, _dir: &Path) -> Result<OnImage, FsError> {
        Err(FsError::Unavailable {
            fs,
            reason: images_refused().unwrap_or_default(),
        })
    }

    #[cfg(unix)]
    fn make(fs: FileSystem, spec: &TreeSpec, dir: &Path) -> Result<OnImage, FsError> {
        let footprint = fixtures::footprint(spec)?;
        fixtures::make_new_folder(dir)?;
        let mut image = OnImage {
            fs,
            dir: dir.to_path_buf(),
            mount_point: dir.join("mnt"),
            root: dir.join("mnt").join("tree"),
            skipped: Vec::new(),
            mounts: Vec::new(),
            undo: Vec::new(),
            keep: false,
        };
        if !crate::cleanup::register_folder(dir) {
            let interrupted = io::Error::new(io::ErrorKind::Interrupted, "interrupted");
            return Err(image.step("registering the image folder", interrupted));
        }
        std::fs::write(dir.join(MARKER), format!("{fs}\n"))
            .map_err(|err| image.step("marking the image folder", err))?;
        image.skipped = os::fill(&mut image, spec, footprint)?;
        Ok(image)
    }

    /// Where the arms find the tree.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The mount point (the root's parent's mount), as `trees build` prints it.
    pub fn mount_point(&self) -> &Path {
        &self.mount_point
    }

    pub fn file_system(&self) -> FileSystem {
        self.fs
    }

    /// Entries (or attributes) the file system could not hold.
    pub fn skipped(&self) -> &[Skipped] {
        &self.skipped
    }

    /// Leaves everything mounted when dropped, for `trees build --fs`: `trees
    /// unmount` undoes it later.
    pub fn keep(&mut self) {
        self.keep = true;
        for id in self.undo.drain(..) {
            crate::cleanup::forget_undo(id);
        }
        crate::cleanup::forget_folder(&self.dir);
    }

    /// Unmounts, detaches and removes now, saying what failed.
    pub fn take_down(mut self) -> Result<(), FsError> {
        self.keep = true;
        self.undo_all()
    }

    /// Records a mount made at `point`, and registers its undo for an interrupt.
    #[cfg(unix)]
    fn mounted(&mut self, point: &Path) {
        self.mounts.push(point.to_path_buf());
        if let Some(id) = crate::cleanup::register_undo(&self.dir, os::undo_argv(point)) {
            self.undo.push(id);
        }
    }

    fn undo_all(&mut self) -> Result<(), FsError> {
        let mut failed = Vec::new();
        while let Some(point) = self.mounts.pop() {
            if let Err(err) = os::unmount(&point) {
                failed.push(format!("{}: {err}", point.display()));
            }
        }
        for id in self.undo.drain(..) {
            crate::cleanup::forget_undo(id);
        }
        if failed.is_empty() {
            if let Err(err) = crate::cleanup::remove_registered_folder(&self.dir) {
                failed.push(format!("{}: {err}", self.dir.display()));
            }
        } else {
            // Removing the folder would descend into a file system still mounted.
            crate::cleanup::forget_folder(&self.dir);
        }
        match failed.is_empty() {
            true => Ok(()),
            false => Err(FsError::Step {
                fs: self.fs,
                doing: "taking the image down".into(),
                detail: failed.join("; "),
            }),
        }
    }

    #[cfg(unix)]
    fn step(&self, doing: &str, err: std::io::Error) -> FsError {
        FsError::Step {
            fs: self.fs,
            doing: doing.to_string(),
            detail: err.to_string(),
        }
    }
}

impl Drop for OnImage {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        if let Err(err) = self.undo_all() {
            eprintln!("eqcheck: {err}");
        }
    }
}

/// `eqcheck trees unmount DIR`: undoes a `trees build --fs … --into DIR`.
pub fn unmount_kept(dir: &Path) -> Result<(), FsError> {
    os::unmount_kept(dir)
}

// What both image makers share: sizing an image, making its folder, building the
// tree at a root inside the mount.

/// The size of an image for a tree: four times what it takes on disk, and a GiB
/// more. The file is sparse (only what is written costs disk, and the room check
/// has made sure that fits), so the room costs nothing, and a file system near
/// full is slow to fill: ext4 writes back and waits once its dirty data nears
/// half its free space, and btrfs commits and flushes over and over as it hunts
/// for metadata room. Building `nm` (420 MiB) onto ext4 took 2.9 s in an image
/// half again its size, 1.4 s in one seven times its size; onto btrfs, 25 s
/// against 3.4 s.
#[cfg(unix)]
fn image_bytes(footprint: Footprint) -> u64 {
    const GIB: u64 = 1 << 30;
    footprint.bytes.saturating_mul(4).saturating_add(GIB)
}

/// The tree's root made searchable by everyone (arms may run unprivileged) and
/// the spec built into it.
#[cfg(unix)]
fn build_at(root: &Path, spec: &TreeSpec, fs: FileSystem) -> Result<Vec<Skipped>, FsError> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let holds = fs.holds();
    let searchable = || std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o755));
    std::fs::DirBuilder::new()
        .mode(0o755)
        .create(root)
        .and_then(|()| if holds.modes { searchable() } else { Ok(()) })
        .map_err(|source| FixtureError::Temp {
            name: spec.name.clone(),
            source,
        })?;
    Ok(fixtures::build_into(spec, root, &holds)?)
}

/// Runs an image tool (`mkfs`, `mount`, `hdiutil`) to its end; `Err` names the
/// command and carries the last line it said on stderr.
#[cfg(unix)]
fn run_tool(fs: FileSystem, program: &Path, args: &[std::ffi::OsString]) -> Result<(), FsError> {
    let tool = program.file_name().map_or_else(
        || program.display().to_string(),
        |name| name.to_string_lossy().into_owned(),
    );
    let failed = |detail: String| FsError::Step {
        fs,
        doing: tool.clone(),
        detail,
    };
    let output = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|err| failed(err.to_string()))?;
    if output.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&output.stderr);
    let last = said.lines().rfind(|l| !l.trim().is_empty());
    let words: Vec<String> = (args.iter())
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    Err(failed(format!(
        "`{tool} {}` {}: {}",
        words.join(" "),
        output.status,
        last.unwrap_or("(it said nothing)")
    )))
}
