//! The file systems the tests mount, and how each is made ready with the standard
//! trees on it: a fresh sparse image made with its `mkfs` and loop-mounted (ext4,
//! ext2 without `filetype`, xfs, btrfs with a subvolume and a snapshot inside the
//! tree), a tmpfs, or an overlay whose lower layer holds the trees and whose upper
//! layer holds what was changed through the mount. Everything here runs inside the
//! private mount namespace the tests start, so a mount never reaches the host's
//! mount table, and on a tmpfs mounted over the scratch folder there, so images,
//! layers and trees vanish with the namespace whatever ends the run (a crash
//! included) and nothing is written to the host's disk.

use std::fmt;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use crate::util::{eqcheck, set_mode, Capability, Cmd, Output};

/// Each image's size. Sparse, so it costs only what is written (the trees hold
/// about 45 MB); mkfs.xfs refuses anything below 300 MB.
const IMAGE_BYTES: u64 = 320 << 20;

/// Limits of the tmpfs mounts, which take memory only as it is written: the work
/// area holding an image or an overlay's layers, and a file system under test.
const WORK_AREA: &str = "size=1g";
const UNDER_TEST: &str = "size=256m";

/// The standard trees built onto every file system, each in a folder of its name.
pub(super) const TREES: [&str; 2] = ["basic", "edge"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FileSystem {
    Ext4,
    /// ext2 made with `-O ^filetype`: getdents64 says DT_UNKNOWN for every entry.
    Ext2NoFiletype,
    Xfs,
    Btrfs,
    Tmpfs,
    /// An overlay over a lower and an upper layer, both on one tmpfs (as container
    /// engines lay them out): inode numbers and devices are the layers' own.
    Overlay,
    /// The same overlay with its lower layer on a tmpfs of its own: files report
    /// each layer's own device and folders the overlay's, and `d_ino` is not the
    /// inode number stat gives for folders and copied-up files.
    OverlayAcross,
}

impl FileSystem {
    const ALL: [FileSystem; 7] = [
        FileSystem::Ext4,
        FileSystem::Ext2NoFiletype,
        FileSystem::Xfs,
        FileSystem::Btrfs,
        FileSystem::Tmpfs,
        FileSystem::Overlay,
        FileSystem::OverlayAcross,
    ];

    /// A short name without spaces, to hand to the process in the namespace.
    pub(super) fn name(self) -> &'static str {
        match self {
            FileSystem::Ext4 => "ext4",
            FileSystem::Ext2NoFiletype => "ext2-no-filetype",
            FileSystem::Xfs => "xfs",
            FileSystem::Btrfs => "btrfs",
            FileSystem::Tmpfs => "tmpfs",
            FileSystem::Overlay => "overlay",
            FileSystem::OverlayAcross => "overlay-across",
        }
    }

    pub(super) fn named(name: &str) -> Option<FileSystem> {
        FileSystem::ALL.into_iter().find(|fs| fs.name() == name)
    }

    /// The type `mount -t` and `/proc/filesystems` call it.
    fn kernel_name(self) -> &'static str {
        match self {
            FileSystem::Ext2NoFiletype => "ext2",
            FileSystem::OverlayAcross => "overlay",
            other => other.name(),
        }
    }

    /// The command that makes an image of it, for those that live on one.
    fn mkfs(self) -> Option<&'static [&'static str]> {
        match self {
            FileSystem::Ext4 => Some(&["mkfs.ext4", "-q", "-F"]),
            FileSystem::Ext2NoFiletype => Some(&["mkfs.ext2", "-q", "-F", "-O", "^filetype"]),
            FileSystem::Xfs => Some(&["mkfs.xfs", "-q"]),
            FileSystem::Btrfs => Some(&["mkfs.btrfs", "-q"]),
            FileSystem::Tmpfs | FileSystem::Overlay | FileSystem::OverlayAcross => None,
        }
    }

    /// What the machine must have to mount it: checked outside the namespace,
    /// before anything is made. Every file system is made on a tmpfs.
    pub(super) fn needs(self) -> Vec<Capability<'static>> {
        let mut needs = vec![
            Capability::Linux,
            Capability::Root,
            Capability::PrivateMounts,
            Capability::Program("mount"),
            Capability::Program("umount"),
            Capability::KernelFileSystem("tmpfs"),
        ];
        if self != FileSystem::Tmpfs {
            needs.push(Capability::KernelFileSystem(self.kernel_name()));
        }
        if let Some(mkfs) = self.mkfs() {
            needs.extend([Capability::Program(mkfs[0]), Capability::LoopDevice]);
        }
        if self == FileSystem::Btrfs {
            needs.push(Capability::Program("btrfs"));
        }
        needs
    }
}

impl fmt::Display for FileSystem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileSystem::Ext2NoFiletype => write!(f, "ext2 (mkfs.ext2 -O ^filetype)"),
            FileSystem::Overlay => write!(f, "overlay (lower and upper layer on one tmpfs)"),
            FileSystem::OverlayAcross => write!(f, "overlay (lower and upper layer on two tmpfs)"),
            other => write!(f, "{}", other.name()),
        }
    }
}

/// A file system mounted with the standard trees on it; unmounted on drop, even
/// when a check panics (the namespace's end would drop the mounts anyway).
pub(super) struct Prepared {
    /// Mount points, in the order they were mounted.
    mounts: Vec<PathBuf>,
    /// Each standard tree's root, in the order of [`TREES`].
    pub(super) trees: Vec<PathBuf>,
    /// What `eqcheck trees build` said it skipped, which the file system could not hold.
    pub(super) skipped: Vec<String>,
}

impl Drop for Prepared {
    fn drop(&mut self) {
        for at in self.mounts.iter().rev() {
            let umount = Cmd::new("umount").arg(at).output();
            if umount.code != Some(0) {
                Cmd::new("umount").arg("--lazy").arg(at).output();
            }
        }
    }
}

/// Mounts a tmpfs over `scratch` (a 0755 folder), then `fs` on it, and builds the
/// standard trees onto that.
pub(super) fn prepare(fs: FileSystem, scratch: &Path) -> Prepared {
    let mut prepared = Prepared {
        mounts: Vec::new(),
        trees: Vec::new(),
        skipped: Vec::new(),
    };
    mount_tmpfs(&mut prepared, scratch, WORK_AREA);
    let root = scratch.join("mnt");
    match fs {
        FileSystem::Tmpfs => mount_tmpfs(&mut prepared, &root, UNDER_TEST),
        FileSystem::Overlay => overlay(&mut prepared, scratch, &root, false),
        FileSystem::OverlayAcross => overlay(&mut prepared, scratch, &root, true),
        _ => mount_image(&mut prepared, fs, scratch, &root),
    }
    if !matches!(fs, FileSystem::Overlay | FileSystem::OverlayAcross) {
        for name in TREES {
            prepared.skipped.extend(build_tree(name, &root.join(name)));
        }
    }
    if fs == FileSystem::Btrfs {
        let skipped = subvolume_and_snapshot(&root.join("basic"));
        prepared.skipped.extend(skipped);
    }
    prepared.trees = TREES.iter().map(|name| root.join(name)).collect();
    prepared
}

/// Runs a command that must succeed, panicking with all it said otherwise.
fn must(cmd: Cmd) -> Output {
    let out = cmd.output();
    if out.code != Some(0) {
        panic!("a step of making the file system failed\n{out}");
    }
    out
}

/// Mounts at `at` (made here unless it exists), then opens the mount's root to
/// every user: the arms of `eqcheck run` as root run as uid 65534.
fn mount(prepared: &mut Prepared, mount: Cmd, at: &Path) {
    if !at.is_dir() {
        fs::create_dir(at).unwrap_or_else(|e| panic!("mkdir {}: {e}", at.display()));
    }
    must(mount.arg(at));
    prepared.mounts.push(at.to_path_buf());
    set_mode(at, 0o755);
}

fn mount_tmpfs(prepared: &mut Prepared, at: &Path, options: &str) {
    let tmpfs = Cmd::new("mount").args(["-t", "tmpfs", "-o", options, "tmpfs"]);
    mount(prepared, tmpfs, at);
}

fn mount_image(prepared: &mut Prepared, fs: FileSystem, scratch: &Path, at: &Path) {
    let image = scratch.join(format!("{}.img", fs.name()));
    let file = fs::File::create(&image).expect("create the image file");
    file.set_len(IMAGE_BYTES).expect("size the sparse image");
    let mkfs = fs.mkfs().expect("a file system on an image has a mkfs");
    must(Cmd::new(mkfs[0]).args(&mkfs[1..]).arg(&image));
    let loop_mount = Cmd::new("mount").args(["-t", fs.kernel_name(), "-o", "loop"]);
    mount(prepared, loop_mount.arg(&image), at);
}

/// `eqcheck trees build NAME --into DIR`; gives what it said it skipped.
fn build_tree(name: &str, into: &Path) -> Vec<String> {
    let build = Cmd::new(eqcheck()).args(["trees", "build", name, "--into"]);
    let out = must(build.arg(into));
    let said = String::from_utf8_lossy(&out.stderr);
    said.lines().map(String::from).collect()
}

/// Inside the basic tree, a btrfs subvolume holding another basic tree, and a
/// snapshot of it: every file in the snapshot has the inode number of its twin in
/// the subvolume and differs only in its device, and each subvolume's root is
/// inode 256. A walker that tells entries apart by inode alone miscounts here.
fn subvolume_and_snapshot(basic: &Path) -> Vec<String> {
    let (subvolume, snapshot) = (basic.join("subvolume"), basic.join("snapshot"));
    must(
        Cmd::new("btrfs")
            .args(["subvolume", "create"])
            .arg(&subvolume),
    );
    let skipped = build_tree("basic", &subvolume.join("basic"));
    let snap = Cmd::new("btrfs").args(["subvolume", "snapshot"]);
    must(snap.arg(&subvolume).arg(&snapshot));
    let twin = |root: &Path| fs::metadata(root.join("basic/src/main.rs")).expect("stat");
    let (a, b) = (twin(&subvolume), twin(&snapshot));
    assert!(
        a.ino() == b.ino() && a.dev() != b.dev(),
        "a snapshot's file keeps its inode number on another device"
    );
    skipped
}

/// An overlay whose lower layer holds both trees, built before the mount, and whose
/// upper layer holds what was changed through the mount afterwards: entries copied
/// up (data, mode, a folder's new entry, one name of a hard-linked file), entries
/// hidden by whiteouts, a folder made opaque, and entries only the upper layer has.
/// The layers are on the work area's tmpfs, the lower one on a tmpfs of its own
/// when they are `apart`.
fn overlay(prepared: &mut Prepared, scratch: &Path, merged: &Path, apart: bool) {
    let [lower, upper, work] = ["lower", "upper", "work"].map(|name| scratch.join(name));
    if apart {
        mount_tmpfs(prepared, &lower, UNDER_TEST);
    } else {
        fs::create_dir(&lower).expect("mkdir the lower layer");
    }
    for dir in [&upper, &work] {
        fs::create_dir(dir).expect("mkdir a layer");
    }
    for name in TREES {
        prepared.skipped.extend(build_tree(name, &lower.join(name)));
    }
    let options = format!(
        "lowerdir={},upperdir={},workdir={}",
        lower.display(),
        upper.display(),
        work.display()
    );
    let overlay = Cmd::new("mount").args(["-t", "overlay", "-o", &options, "overlay"]);
    mount(prepared, overlay, merged);
    change_through_overlay(merged);
    // Both layers are in play: the lower still holds the original, the upper the
    // copy and a whiteout (a 0:0 character device) for each removed entry.
    assert!(lower.join("basic/src/main.rs").is_file() && upper.join("basic/src/main.rs").is_file());
    let whiteout = fs::symlink_metadata(upper.join("basic/assets/tiny")).expect("a whiteout");
    assert!(whiteout.file_type().is_char_device() && whiteout.rdev() == 0);
}

/// The changes made through the merged folder, each naming what the overlay does.
fn change_through_overlay(merged: &Path) {
    let at = |rel: &str| merged.join(rel);
    // Data copy-ups, one of them of a file with three names: without the overlay's
    // `index` feature (off by default) the copy is a new inode with one link, while
    // the two names left in the lower layer still say three.
    for file in [
        "basic/src/main.rs",
        "basic/data/shared.dat",
        "edge/links/original",
    ] {
        let mut f = OpenOptions::new().append(true).open(at(file)).expect(file);
        f.write_all(&[b'+'; 5000])
            .expect("append through the overlay");
    }
    // A change of mode alone, which copies the whole file up (`metacopy` is off).
    set_mode(&at("basic/docs/notes.txt"), 0o600);
    set_mode(&at("edge/sizes/4096"), 0o600);
    // Whiteouts: a file and a folder removed from the lower layer's view.
    fs::remove_file(at("basic/assets/tiny")).expect("whiteout a file");
    fs::remove_file(at("edge/names/café.txt")).expect("whiteout a file");
    fs::remove_dir(at("basic/empty")).expect("whiteout a folder");
    // A folder removed and made again is opaque: nothing below shows through.
    fs::remove_dir_all(at("basic/unicode")).expect("remove a lower folder");
    fs::create_dir(at("basic/unicode")).expect("an opaque folder");
    fs::write(at("basic/unicode/only-upper"), [7; 3000]).expect("write");
    // New entries in copied-up folders and in a folder only the upper layer has.
    fs::write(at("basic/src/walk/added.rs"), [1; 2000]).expect("write");
    fs::write(at("edge/many/added"), [2; 9000]).expect("write");
    fs::create_dir_all(at("basic/fresh/inner")).expect("mkdir");
    fs::write(at("basic/fresh/inner/file"), [3; 12000]).expect("write");
    std::os::unix::fs::symlink("../src", at("basic/fresh/to-src")).expect("symlink");
}
