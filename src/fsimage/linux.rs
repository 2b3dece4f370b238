//! Linux: file-system images made with the distribution's `mkfs` tools in a sparse
//! file, mounted with `mount -o loop` (whose loop device detaches itself when the
//! file system is unmounted), tmpfs and overlay mounted directly, exFAT through
//! its FUSE driver (or the kernel's), FAT through the kernel's vfat only. Every mount is registered with the cleanup, so an
//! interrupt unmounts it before the folders go; inside the private mount namespace
//! a crash leaves nothing in the host's mount table either.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use super::{build_at, image_bytes, run_tool, FileSystem, FsError, OnImage, MARKER};
use crate::cleanup;
use crate::fixtures::{room::Footprint, Skipped, TreeSpec};

/// How many mounts deep `trees unmount` digs on one mount point.
const MAX_STACKED: usize = 64;

/// CAP_SYS_ADMIN's bit in the capability sets of `/proc/self/status`.
const CAP_SYS_ADMIN: u32 = 21;

pub fn images_refused() -> Option<String> {
    if rustix::process::geteuid().is_root() || has_capability(CAP_SYS_ADMIN) {
        return None;
    }
    Some("mounting file-system images needs root (or CAP_SYS_ADMIN); run as root, or use --fs native".into())
}

fn has_capability(bit: u32) -> bool {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    status
        .lines()
        .find_map(|line| line.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << bit) != 0)
}

/// The programs a file system needs, and the kernel's or FUSE's driver.
pub fn unavailable(fs: FileSystem) -> Option<String> {
    let missing: Vec<&str> = tools(fs)
        .iter()
        .copied()
        .filter(|tool| find_tool(tool).is_none())
        .collect();
    if !missing.is_empty() {
        return Some(format!(
            "needs {} (Debian: {})",
            missing.join(" and "),
            package(fs)
        ));
    }
    if driver(fs).is_none() {
        let fuse = match fs {
            FileSystem::Vfat => ", and FAT's FUSE driver is not used (fusefat shows names that fit 8.3 in upper case)",
            FileSystem::Exfat => " and no exfat-fuse with /dev/fuse",
            _ => "",
        };
        return Some(format!(
            "this kernel has no {} driver (see /proc/filesystems){fuse}",
            kernel_name(fs)
        ));
    }
    None
}

/// The programs a file system's image is made and mounted with, beyond `mount`.
fn tools(fs: FileSystem) -> &'static [&'static str] {
    match fs {
        FileSystem::Native | FileSystem::Tmpfs | FileSystem::Overlay => &["mount"],
        FileSystem::Apfs | FileSystem::Hfsplus => &["hdiutil"],
        FileSystem::Ext4 => &["mount", "mkfs.ext4"],
        FileSystem::Ext2NoDtype => &["mount", "mkfs.ext2"],
        FileSystem::Xfs => &["mount", "mkfs.xfs"],
        FileSystem::Btrfs => &["mount", "mkfs.btrfs"],
        FileSystem::Squashfs => &["mount", "mksquashfs"],
        FileSystem::Exfat => &["mount", "mkfs.exfat"],
        FileSystem::Vfat => &["mount", "mkfs.vfat"],
    }
}

fn package(fs: FileSystem) -> &'static str {
    match fs {
        FileSystem::Native | FileSystem::Tmpfs | FileSystem::Overlay => "mount",
        FileSystem::Apfs | FileSystem::Hfsplus => "none: macOS only",
        FileSystem::Ext4 | FileSystem::Ext2NoDtype => "e2fsprogs",
        FileSystem::Xfs => "xfsprogs",
        FileSystem::Btrfs => "btrfs-progs",
        FileSystem::Squashfs => "squashfs-tools",
        FileSystem::Exfat => "exfatprogs, and exfat-fuse where the kernel has no exfat",
        FileSystem::Vfat => "dosfstools",
    }
}

/// The name the kernel lists the file system under in /proc/filesystems: its
/// own name but for ext2 (which the ext4 driver mounts).
fn kernel_name(fs: FileSystem) -> &'static str {
    match fs {
        FileSystem::Ext2NoDtype => "ext4",
        _ => fs.name(),
    }
}

/// How a file system gets mounted here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Driver {
    Kernel,
    /// exFAT's FUSE driver, preferred where both exist: it is what a desktop
    /// without the kernel module uses.
    Fuse,
}

fn driver(fs: FileSystem) -> Option<Driver> {
    let kernel =
        kernel_has(kernel_name(fs)) || (fs == FileSystem::Ext2NoDtype && kernel_has("ext2"));
    // FAT has no FUSE driver here. fusefat makes each new entry in time that grows
    // with its folder (300 in one folder took 14 s), so an image cannot be filled
    // through it; nor can one filled by another tool (mtools) be read through it: it
    // ignores the case bits a name that fits 8.3 is stored with (`index.js` shows as
    // `INDEX.JS`), and shows every time a month late.
    let fuse_helper = match fs {
        FileSystem::Exfat => Some("mount.exfat-fuse"),
        _ => None,
    };
    let fuse = fuse_helper.is_some_and(|helper| find_tool(helper).is_some())
        && Path::new("/dev/fuse").exists()
        && kernel_has("fuse");
    match (fuse, kernel) {
        (true, _) => Some(Driver::Fuse),
        (false, true) => Some(Driver::Kernel),
        (false, false) => None,
    }
}

fn kernel_has(name: &str) -> bool {
    std::fs::read_to_string("/proc/filesystems").is_ok_and(|listed| {
        listed
            .lines()
            .any(|line| line.split_whitespace().last() == Some(name))
    })
}

/// A program on PATH, or in the sbin folders a non-login root's PATH may lack.
fn find_tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

pub fn enter_private_namespace() -> Result<(), FsError> {
    // unshare(CLONE_NEWNS) also unshares the file-system context, which fails
    // (EINVAL) once threads share it: this must run before any thread starts.
    if unsafe { libc::unshare(libc::CLONE_NEWNS) } != 0 {
        return Err(FsError::Namespace(io::Error::last_os_error()));
    }
    // The new namespace starts as a copy whose mounts still propagate to the host's
    // peers: make every one private so no mount made here goes back.
    let root = c"/";
    let none = c"none";
    let flags = libc::MS_REC | libc::MS_PRIVATE;
    let made = unsafe {
        libc::mount(
            none.as_ptr(),
            root.as_ptr(),
            std::ptr::null(),
            flags,
            std::ptr::null(),
        )
    };
    if made != 0 {
        return Err(FsError::Namespace(io::Error::last_os_error()));
    }
    Ok(())
}

/// Mounts with `mount ARGS… POINT`, the unmount registered for an interrupt.
fn mount(m: &mut OnImage, args: &[&std::ffi::OsStr], point: &Path) -> Result<(), FsError> {
    std::fs::create_dir_all(point).map_err(|err| m.step("making the mount point", err))?;
    let mut argv: Vec<OsString> = args.iter().map(|a| a.to_os_string()).collect();
    argv.push(point.as_os_str().to_owned());
    run(m.fs, "mount", &argv)?;
    m.mounted(point);
    Ok(())
}

/// The command an interrupt runs to undo a mount: lazily, so it never blocks.
pub fn undo_argv(point: &Path) -> Vec<OsString> {
    vec![
        "umount".into(),
        "--lazy".into(),
        point.as_os_str().to_owned(),
    ]
}

/// Unmounts one file system, waiting out a short busy spell (a process that has
/// just been killed may still hold it), then detaching it lazily.
pub fn unmount(point: &Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(point.as_os_str().as_bytes())?;
    for _ in 0..50 {
        if unsafe { libc::umount2(path.as_ptr(), 0) } == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EBUSY) {
            return Err(err);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    match unsafe { libc::umount2(path.as_ptr(), libc::MNT_DETACH) } {
        0 => Ok(()),
        _ => Err(io::Error::last_os_error()),
    }
}

/// Runs a tool found on PATH (or in sbin) to its end.
fn run(fs: FileSystem, tool: &str, args: &[OsString]) -> Result<(), FsError> {
    let program = find_tool(tool).ok_or_else(|| FsError::Step {
        fs,
        doing: tool.to_string(),
        detail: "not found".into(),
    })?;
    run_tool(fs, &program, args)
}

/// Makes `m`'s file system, mounts it and builds `spec` at its root.
pub fn fill(
    m: &mut OnImage,
    spec: &TreeSpec,
    footprint: Footprint,
) -> Result<Vec<Skipped>, FsError> {
    match m.fs {
        FileSystem::Tmpfs => on_tmpfs(m, spec, footprint),
        FileSystem::Overlay => on_overlay(m, spec),
        FileSystem::Squashfs => on_squashfs(m, spec, footprint),
        _ => on_image(m, spec, footprint),
    }
}

fn on_tmpfs(
    m: &mut OnImage,
    spec: &TreeSpec,
    footprint: Footprint,
) -> Result<Vec<Skipped>, FsError> {
    let point = m.mount_point.clone();
    mount_tmpfs(m, footprint, &point)?;
    build_at(&m.root.clone(), spec, m.fs)
}

/// A tmpfs at `point` with room for the tree: it takes memory only as it is
/// written.
fn mount_tmpfs(m: &mut OnImage, footprint: Footprint, point: &Path) -> Result<(), FsError> {
    let options = format!(
        "size={},nr_inodes={},mode=0755",
        image_bytes(footprint),
        footprint.inodes.saturating_add(1024)
    );
    let args = ["-t", "tmpfs", "-o", &options, "tmpfs"].map(std::ffi::OsStr::new);
    mount(m, &args, point)
}

/// What a tmpfs may take: `MemAvailable` of `/proc/meminfo`, or less where this
/// process's memory cgroup leaves less room (in a container, `MemAvailable` is
/// the host's, and a tmpfs's pages count against the container's limit), in bytes.
fn memory_available() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    let host = kib.saturating_mul(1024);
    Some(cgroup_memory_room().map_or(host, |room| room.min(host)))
}

/// The memory cgroup's limit less its use: cgroup v1's memory controller
/// (`memory.limit_in_bytes`, `memory.usage_in_bytes`) where it is mounted, else
/// cgroup v2 (`memory.max`, `memory.current`); none where there is no limit or it
/// cannot be read.
fn cgroup_memory_room() -> Option<u64> {
    use crate::cgroups::{own_folder, Hierarchy};
    let v1 = || {
        Some((
            own_folder(Hierarchy::Controller("memory"))?,
            "memory.limit_in_bytes",
            "memory.usage_in_bytes",
        ))
    };
    let v2 = || {
        Some((
            own_folder(Hierarchy::Unified)?,
            "memory.max",
            "memory.current",
        ))
    };
    let (dir, limit, usage) = v1().or_else(v2)?;
    let read = |name: &str| -> Option<u64> {
        std::fs::read_to_string(dir.join(name))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    Some(read(limit)?.saturating_sub(read(usage)?))
}

/// The tree is built into the lower layer, so that what the arms read is the
/// overlay's view of files it did not create: inode numbers come from the lower
/// file system while the overlay's own are what `d_ino` may say.
fn on_overlay(m: &mut OnImage, spec: &TreeSpec) -> Result<Vec<Skipped>, FsError> {
    let lower = m.dir.join("lower");
    let upper = m.dir.join("upper");
    let work = m.dir.join("work");
    for folder in [&lower, &upper, &work] {
        std::fs::create_dir(folder).map_err(|err| m.step("making the overlay's layers", err))?;
    }
    let skipped = build_at(&lower.join("tree"), spec, m.fs)?;
    let options = format!(
        "lowerdir={},upperdir={},workdir={}",
        lower.display(),
        upper.display(),
        work.display()
    );
    let point = m.mount_point.clone();
    mount(
        m,
        &[
            "-t".as_ref(),
            "overlay".as_ref(),
            "-o".as_ref(),
            options.as_ref(),
            "overlay".as_ref(),
        ],
        &point,
    )?;
    Ok(skipped)
}

/// squashfs is made from a finished folder: the tree is staged, packed, and the
/// stage removed. The stage is a tmpfs where the tree takes at most a quarter of
/// the memory free, as what it is staged on changes nothing in the image, and a
/// temp folder on a disk that has just freed many inodes can take many times
/// longer to fill (`nm`: 50 s against 0.6 s); else the temp folder.
fn on_squashfs(
    m: &mut OnImage,
    spec: &TreeSpec,
    footprint: Footprint,
) -> Result<Vec<Skipped>, FsError> {
    let stage = m.dir.join("stage");
    let in_memory = memory_available().is_some_and(|free| footprint.bytes <= free / 4);
    match in_memory {
        true => mount_tmpfs(m, footprint, &stage)?,
        false => std::fs::create_dir(&stage).map_err(|err| m.step("making the stage", err))?,
    }
    let skipped = build_at(&stage.join("tree"), spec, m.fs)?;
    let image = m.dir.join("image");
    let args: Vec<OsString> = vec![
        stage.clone().into(),
        image.clone().into(),
        "-noappend".into(),
        "-quiet".into(),
        "-no-progress".into(),
        // Packing time, not what the arms see: a walker reads the same names,
        // sizes, links and block counts (squashfs derives them from the size) from
        // an uncompressed image, which every squashfs driver reads, and finding
        // duplicate contents only shares their blocks. Together a third off
        // mksquashfs's time for `nm`.
        "-noI".into(),
        "-noD".into(),
        "-noF".into(),
        "-noX".into(),
        "-no-duplicates".into(),
    ];
    run(m.fs, "mksquashfs", &args)?;
    if in_memory {
        unmount_last(m, &stage)?;
    }
    cleanup::remove_tree(&stage).map_err(|err| m.step("removing the stage", err))?;
    let point = m.mount_point.clone();
    mount(
        m,
        &["-o".as_ref(), "loop,ro".as_ref(), image.as_ref()],
        &point,
    )?;
    Ok(skipped)
}

/// A sparse image file, `mkfs`, and a mount through the kernel or FUSE.
fn on_image(
    m: &mut OnImage,
    spec: &TreeSpec,
    footprint: Footprint,
) -> Result<Vec<Skipped>, FsError> {
    let image = make_image(m, footprint)?;
    let point = m.mount_point.clone();
    let (kind, options): (&[&str], &str) = match (m.fs, driver(m.fs)) {
        (FileSystem::Exfat, Some(Driver::Fuse)) => (&["-t", "exfat-fuse"], "loop,umask=022"),
        (FileSystem::Exfat | FileSystem::Vfat, _) => (&[], "loop,umask=022"),
        _ => (&[], "loop"),
    };
    let mut args: Vec<&std::ffi::OsStr> = kind.iter().map(|k| k.as_ref()).collect();
    args.extend(["-o".as_ref(), options.as_ref(), image.as_os_str()]);
    mount(m, &args, &point)?;
    let skipped = build_at(&m.root.clone(), spec, m.fs)?;
    if !m.fs.holds().case_sensitive {
        // FAT and exFAT keep times more coarsely than the build sets them, and a
        // driver serves what was set from its cache until it reads the disk again:
        // the tree would seem to change under the arms once the cache went. Mounted
        // afresh, the tree is what the disk holds from the first look on.
        remount(m, &args, &point)?;
    }
    Ok(skipped)
}

/// Unmounts the last mount, `point`, and mounts it again with `args`.
fn remount(m: &mut OnImage, args: &[&std::ffi::OsStr], point: &Path) -> Result<(), FsError> {
    unmount_last(m, point)?;
    mount(m, args, point)
}

/// Unmounts the last mount, `point`, and forgets it once it is gone: one that
/// stays mounted is still taken down (never removed through) at the end.
fn unmount_last(m: &mut OnImage, point: &Path) -> Result<(), FsError> {
    unmount(point).map_err(|err| m.step("unmounting", err))?;
    m.mounts.pop();
    if let Some(id) = m.undo.pop() {
        crate::cleanup::forget_undo(id);
    }
    Ok(())
}

/// A sparse image file and `mkfs`; nothing mounted yet.
fn make_image(m: &OnImage, footprint: Footprint) -> Result<PathBuf, FsError> {
    let image = m.dir.join("image");
    std::fs::File::create(&image)
        .and_then(|file| file.set_len(image_bytes(footprint)))
        .map_err(|err| m.step("making the image file", err))?;
    let (tool, mut args) = mkfs(m.fs, footprint);
    args.push(image.clone().into());
    run(m.fs, tool, &args)?;
    Ok(image)
}

/// The `mkfs` tool and its options, the image path to follow.
fn mkfs(fs: FileSystem, footprint: Footprint) -> (&'static str, Vec<OsString>) {
    // ext2/ext4 fix their inode count when made: room for every entry.
    let inodes = footprint.inodes.saturating_add(1024).to_string();
    let words: Vec<&str> = match fs {
        FileSystem::Ext4 => vec!["-q", "-F", "-m", "0", "-N", &inodes],
        FileSystem::Ext2NoDtype => vec!["-q", "-F", "-m", "0", "-O", "^filetype", "-N", &inodes],
        FileSystem::Xfs => vec!["-q", "-f"],
        FileSystem::Btrfs => vec!["-q", "-f"],
        // Its default cluster for an image this size is 32 KiB, a cluster per
        // file: 60,000 small files would need 2 GB.
        FileSystem::Exfat => vec!["-c", "4K"],
        FileSystem::Vfat => vec!["-F", "32"],
        _ => vec![],
    };
    let tool = tools(fs).last().copied().unwrap_or("mkfs");
    (tool, words.into_iter().map(OsString::from).collect())
}

pub fn unmount_kept(dir: &Path) -> Result<(), FsError> {
    let marker = std::fs::read_to_string(dir.join(MARKER)).map_err(|_| FsError::NotAnImage {
        dir: dir.to_path_buf(),
    })?;
    let fs = FileSystem::named(marker.trim()).ok_or_else(|| FsError::NotAnImage {
        dir: dir.to_path_buf(),
    })?;
    let dir = std::fs::canonicalize(dir).map_err(|source| FsError::Step {
        fs,
        doing: "finding the image folder".into(),
        detail: source.to_string(),
    })?;
    // Mounts stacked on one point show one at a time: look again until none is
    // left inside.
    for _ in 0..MAX_STACKED {
        let mut inside: Vec<PathBuf> = mount_points()
            .into_iter()
            .filter(|point| point.starts_with(&dir) && *point != dir)
            .collect();
        if inside.is_empty() {
            break;
        }
        // Deepest first, so nothing is unmounted from under another mount.
        inside.sort_by_key(|point| std::cmp::Reverse(point.components().count()));
        for point in inside {
            unmount(&point).map_err(|err| FsError::Step {
                fs,
                doing: format!("unmounting {}", point.display()),
                detail: err.to_string(),
            })?;
        }
    }
    cleanup::remove_tree(&dir).map_err(|err| FsError::Step {
        fs,
        doing: format!("removing {}", dir.display()),
        detail: err.to_string(),
    })
}

/// Every mount point of this mount namespace.
fn mount_points() -> Vec<PathBuf> {
    let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return Vec::new();
    };
    info.lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|escaped| PathBuf::from(unescape_mount_path(escaped)))
        .collect()
}

/// mountinfo writes space, tab, newline and backslash in a path as `\NNN` octal.
fn unescape_mount_path(escaped: &str) -> OsString {
    use std::os::unix::ffi::OsStringExt;
    let bytes = escaped.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match (bytes[i], octal) {
            (b'\\', Some(digits)) => {
                let value = digits.iter().fold(0u32, |v, d| v * 8 + u32::from(d - b'0'));
                out.push(value as u8);
                i += 4;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    OsString::from_vec(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_paths_are_unescaped_as_mountinfo_escapes_them() {
        assert_eq!(
            unescape_mount_path("/a\\040b\\134c"),
            OsString::from("/a b\\c")
        );
        assert_eq!(unescape_mount_path("/plain"), OsString::from("/plain"));
        assert_eq!(unescape_mount_path("/x\\04"), OsString::from("/x\\04"));
    }

    #[test]
    fn images_are_never_below_what_mkfs_takes_and_leave_room_to_spare() {
        let small = Footprint {
            inodes: 10,
            bytes: 10,
        };
        // xfs takes nothing below 300 MiB.
        assert!(image_bytes(small) >= 320 << 20);
        let nm = Footprint {
            inodes: 60_000,
            bytes: 420 << 20,
        };
        assert!(image_bytes(nm) >= 4 * (420 << 20), "{}", image_bytes(nm));
    }
}
