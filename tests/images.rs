//! `eqcheck trees build NAME --fs FS --into DIR` and `eqcheck trees unmount DIR`:
//! for every file system, the tree lands on a fresh mount of that type holding the
//! same entries as a native build (less what the file system cannot hold, each
//! named), and unmounting leaves no mount, no loop device and no folder. Each
//! file system is its own test, run inside `unshare --mount --propagation
//! private`, so a failure names it and no mount outlives the test.
#![cfg(target_os = "linux")]

use std::collections::BTreeSet;
use std::path::Path;

use crate::util::{eqcheck, lossy, skip_unless, temp_dir, Capability, Cmd};

/// The script run in the namespace: build, say where and what, list the tree,
/// take it down, and say what is left.
const SCRIPT: &str = r#"
set -u
root=$("$EQCHECK" trees build basic --fs "$FS" --into "$DIR/image") || exit 10
echo "root=$root"
echo "type=$(findmnt -n -o FSTYPE --target "$root")"
(cd "$root" && find . -mindepth 1 | sort) > "$DIR/listed" || exit 11
# Every entry left out, one per line, if any was.
cp "$DIR/image/skipped" "$DIR/skipped" 2>/dev/null || : > "$DIR/skipped"
"$EQCHECK" trees unmount "$DIR/image" || exit 12
echo "left=$(test -e "$DIR/image" && echo folder)$(grep -c " $DIR/image" /proc/self/mountinfo)"
"#;

/// The mount types a file system may show, by its `--fs` name (FUSE or the
/// kernel's driver for exFAT and FAT, whichever this machine has).
fn mount_types(fs: &str) -> &'static [&'static str] {
    match fs {
        "ext4" => &["ext4"],
        "ext2-nodtype" => &["ext2"],
        "xfs" => &["xfs"],
        "btrfs" => &["btrfs"],
        "tmpfs" => &["tmpfs"],
        "overlay" => &["overlay"],
        "squashfs" => &["squashfs"],
        "exfat" => &["fuseblk", "exfat"],
        "vfat" => &["fuse", "fuse.fusefat", "vfat"],
        _ => &[],
    }
}

/// What `basic` holds on a file system without limits: a native build's entries.
fn native_entries(scratch: &Path) -> BTreeSet<String> {
    let into = scratch.join("native");
    let out = Cmd::new(eqcheck())
        .args(["trees", "build", "basic", "--into"])
        .arg(&into)
        .output();
    assert_eq!(out.code, Some(0), "{out}");
    let listed = Cmd::new("find")
        .arg(".")
        .args(["-mindepth", "1"])
        .cwd(&into)
        .output();
    lossy(&listed.stdout).lines().map(str::to_string).collect()
}

fn check(fs: &str) {
    let needs = [
        Capability::Root,
        Capability::PrivateMounts,
        Capability::Program("findmnt"),
        Capability::FileSystemImage(fs),
    ];
    if needs.into_iter().any(skip_unless) {
        return;
    }
    let scratch = temp_dir();
    let expected = native_entries(scratch.path());
    let out = Cmd::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", SCRIPT])
        .env("EQCHECK", eqcheck())
        .env("FS", fs)
        .env("DIR", scratch.path())
        .output();
    let stdout = lossy(&out.stdout);
    assert_eq!(out.code, Some(0), "{out}");
    let said = |key: &str| {
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| panic!("no {key}= line\n{out}"))
            .to_string()
    };
    let mount_type = said("type");
    assert!(
        mount_types(fs).contains(&mount_type.as_str()),
        "--fs {fs} mounted {mount_type}\n{out}"
    );
    assert_eq!(said("left"), "0", "something left after unmount\n{out}");
    let listed: BTreeSet<String> = std::fs::read_to_string(scratch.path().join("listed"))
        .expect("the listing")
        .lines()
        .map(str::to_string)
        .collect();
    // `FILE:LINE: PATH: reason` per line.
    let skipped = std::fs::read_to_string(scratch.path().join("skipped")).expect("the skips");
    for missing in expected.difference(&listed) {
        let path = missing.trim_start_matches("./");
        assert!(
            skipped.contains(&format!(": {path}: ")) || expected_parent_skipped(path, &skipped),
            "--fs {fs}: {path} missing and not said skipped\n{out}"
        );
    }
    assert!(
        listed.is_subset(&expected),
        "--fs {fs}: entries a native build lacks: {:?}",
        listed.difference(&expected).collect::<Vec<_>>()
    );
    // Loop devices are the host's, not the namespace's: none may still hold an
    // image under the scratch folder.
    assert_eq!(loop_devices_under(scratch.path()), Vec::<String>::new());
}

/// An entry inside a skipped folder is covered by the folder's skip.
fn expected_parent_skipped(path: &str, skipped: &str) -> bool {
    let mut parent = Path::new(path).parent();
    while let Some(folder) = parent.filter(|p| !p.as_os_str().is_empty()) {
        if skipped.contains(&format!(": {}: ", folder.display())) {
            return true;
        }
        parent = folder.parent();
    }
    false
}

#[test]
fn ext4() {
    check("ext4");
}

#[test]
fn ext2_without_filetype() {
    check("ext2-nodtype");
}

#[test]
fn xfs() {
    check("xfs");
}

#[test]
fn btrfs() {
    check("btrfs");
}

#[test]
fn tmpfs() {
    check("tmpfs");
}

#[test]
fn overlay() {
    check("overlay");
}

#[test]
fn squashfs() {
    check("squashfs");
}

#[test]
fn exfat() {
    check("exfat");
}

/// Where the kernel has no vfat driver there is no FAT to test (fusefat shows
/// 8.3 names in upper case), and asking for it must say so.
#[test]
fn vfat() {
    let kernel_has_vfat = std::fs::read_to_string("/proc/filesystems").is_ok_and(|known| {
        known
            .lines()
            .any(|l| l.split_whitespace().last() == Some("vfat"))
    });
    if kernel_has_vfat || skip_unless(Capability::Root) {
        return check("vfat");
    }
    let scratch = temp_dir();
    let out = Cmd::new(eqcheck())
        .args(["trees", "build", "basic", "--fs", "vfat", "--into"])
        .arg(scratch.path().join("x"))
        .output();
    assert_eq!(out.code, Some(2), "{out}");
    let said = lossy(&out.stderr);
    assert!(
        said.contains("no vfat driver") && said.contains("fusefat"),
        "{out}"
    );
    assert!(!scratch.path().join("x").exists(), "{out}");
}

#[test]
fn unknown_and_native_file_systems_and_foreign_folders_are_refused_clearly() {
    let scratch = temp_dir();
    let out = Cmd::new(eqcheck())
        .args(["trees", "build", "basic", "--fs", "zfs", "--into"])
        .arg(scratch.path().join("x"))
        .output();
    assert_eq!(out.code, Some(2), "{out}");
    assert!(
        lossy(&out.stderr).contains("unknown file system `zfs`"),
        "{out}"
    );
    let out = Cmd::new(eqcheck())
        .args(["trees", "unmount"])
        .arg(scratch.path())
        .output();
    assert_eq!(out.code, Some(2), "{out}");
    assert!(lossy(&out.stderr).contains("was not made by"), "{out}");
    assert!(
        scratch.path().exists(),
        "a folder it did not make was touched"
    );
    let out = Cmd::new(eqcheck())
        .args(["--tree", "basic", "--fs", "native,zfs"])
        .output();
    assert_eq!(out.code, Some(2), "{out}");
    assert!(
        lossy(&out.stderr).contains("--fs: unknown file system `zfs`"),
        "{out}"
    );
    let toml = "trees = [\"basic\"]\nfs = [\"ext4\", \"zfs\"]\n";
    std::fs::write(scratch.path().join("eqcheck.toml"), toml).unwrap();
    let out = Cmd::new(eqcheck()).cwd(scratch.path()).output();
    assert_eq!(out.code, Some(2), "{out}");
    let said = lossy(&out.stderr);
    assert!(
        said.contains("eqcheck.toml:2:15: fs: unknown file system `zfs`"),
        "the toml's error does not point at the word\n{out}"
    );
}

/// The loop devices whose image file lies under `dir`.
fn loop_devices_under(dir: &Path) -> Vec<String> {
    let Ok(devices) = std::fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    let dir = dir.display().to_string();
    devices
        .flatten()
        .filter_map(|d| std::fs::read_to_string(d.path().join("loop/backing_file")).ok())
        .filter(|file| file.trim().starts_with(&dir))
        .collect()
}

/// `--fs` makes a tree per file system, `TREE@FS` in case ids and reports, each
/// built on its own mount; and after the run nothing is mounted, attached or left
/// in the temp folder.
#[test]
fn a_run_over_several_file_systems_names_each_and_leaves_nothing() {
    let needs = [
        Capability::Root,
        Capability::FileSystemImage("ext4"),
        Capability::FileSystemImage("tmpfs"),
    ];
    if needs.into_iter().any(skip_unless) {
        return;
    }
    let tmp = temp_dir();
    let markdown = tempfile::NamedTempFile::new().unwrap();
    let out = Cmd::new(eqcheck())
        .args([
            "--tree",
            "basic",
            "--fs",
            "native,ext4,tmpfs",
            "--sets",
            "sizes",
        ])
        .args(["--json", "-", "--markdown"])
        .arg(markdown.path())
        .env("TMPDIR", tmp.path())
        .output();
    assert_eq!(out.code, Some(0), "{out}");
    let report = crate::util::json_report(&out);
    let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
    let trees: Vec<[String; 3]> = (report["trees"].as_array().expect("trees").iter())
        .map(|t| [text(&t["name"]), text(&t["fs"]), text(&t["file_system"])])
        .collect();
    let named: Vec<[&str; 2]> = trees
        .iter()
        .map(|[n, fs, _]| [n.as_str(), fs.as_str()])
        .collect();
    let expected = [
        ["basic", "native"],
        ["basic@ext4", "ext4"],
        ["basic@tmpfs", "tmpfs"],
    ];
    assert_eq!(named, expected, "{out}");
    assert_eq!(
        trees[2][2], "tmpfs",
        "basic@tmpfs was not on a tmpfs\n{out}"
    );
    let cases = report["cases"].as_array().expect("cases");
    assert!(
        cases
            .iter()
            .any(|c| text(&c["id"]).starts_with("basic@ext4:") && c["fs"] == "ext4"),
        "no case id or fs names the file system\n{out}"
    );
    let markdown = std::fs::read_to_string(markdown.path()).unwrap();
    let header = "| Tree | File system | Sets | Identical |";
    assert!(markdown.contains(header), "{markdown}");
    assert!(markdown.contains("| basic | ext4 | 8 |"), "{markdown}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("File system"),
        "no column in the terminal\n{out}"
    );
    assert!(
        std::fs::read_dir(tmp.path()).unwrap().next().is_none(),
        "temp folder not emptied"
    );
    assert_eq!(loop_devices_under(tmp.path()), Vec::<String>::new());
}

/// SIGINT and SIGTERM in the middle of a run on images unmount them, detach their
/// loop devices and remove them, as they remove temp trees.
#[test]
fn an_interrupted_run_on_images_leaves_no_mount_loop_device_or_image() {
    use crate::guard::{libc_signal, processes_mentioning, send, wait_until};
    if [Capability::Root, Capability::FileSystemImage("ext4")]
        .into_iter()
        .any(skip_unless)
    {
        return;
    }
    let sleeper = crate::util::double("sleep 600");
    for signal in [libc_signal::INT, libc_signal::TERM] {
        let tmp = temp_dir();
        let logs = temp_dir();
        let mut child = std::process::Command::new(eqcheck())
            .args(["--ref", &sleeper, "--cand", &sleeper, "--timeout", "900"])
            .args(["--tree", "basic", "--fs", "ext4", "--sets", "sizes"])
            .env("TMPDIR", tmp.path())
            .stdout(std::fs::File::create(logs.path().join("out")).unwrap())
            .stderr(std::fs::File::create(logs.path().join("err")).unwrap())
            .spawn()
            .unwrap();
        let marker = tmp.path().to_string_lossy().into_owned();
        wait_until("the arms run on the image", || {
            processes_mentioning(&format!("{marker}/eqc-run")).len() >= 2
        });
        assert_eq!(
            loop_devices_under(tmp.path()).len(),
            1,
            "the image is attached"
        );
        send(child.id(), signal);
        let status = child.wait().unwrap();
        let said = std::fs::read_to_string(logs.path().join("err")).unwrap_or_default();
        assert_eq!(status.code(), Some(128 + signal), "{said}");
        wait_until("the loop device detaches", || {
            loop_devices_under(tmp.path()).is_empty()
        });
        let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().collect();
        assert!(left.is_empty(), "signal {signal} left {left:?}\n{said}");
    }
}

/// `probe --fs`: on ext2 made without `filetype` every entry lists as unknown, so
/// the census says 100% unknown, and on ext4 none.
#[test]
fn the_probe_census_on_ext2_without_filetype_is_all_unknown() {
    let needs = [
        Capability::Root,
        Capability::FileSystemImage("ext2-nodtype"),
        Capability::FileSystemImage("ext4"),
    ];
    if needs.into_iter().any(skip_unless) {
        return;
    }
    let out = Cmd::new(eqcheck())
        .args([
            "probe",
            "--tree",
            "basic",
            "--fs",
            "ext2-nodtype,ext4",
            "--json",
            "-",
        ])
        .output();
    assert_eq!(out.code, Some(0), "{out}");
    let report = crate::util::json_report(&out);
    let trees = report["trees"].as_array().expect("trees");
    let census = |name: &str| {
        let tree = trees.iter().find(|t| t["name"] == name);
        tree.unwrap_or_else(|| panic!("no tree {name}\n{out}"))["census"].clone()
    };
    let nodtype = census("basic@ext2-nodtype");
    assert!(nodtype["unknown"].as_u64() > Some(0), "{nodtype}");
    for kind in ["folders", "files", "symlinks", "other"] {
        assert_eq!(
            nodtype[kind], 0,
            "{kind} typed on ext2 without filetype: {nodtype}"
        );
    }
    assert_eq!(census("basic@ext4")["unknown"], 0, "{out}");
}

/// `--keep` cannot keep a tree on an image (the mount lives in eqcheck's private
/// namespace): the run says so and how to build it again, and leaves nothing.
#[test]
fn keep_says_an_image_goes_with_the_run_and_how_to_build_it_again() {
    if [Capability::Root, Capability::FileSystemImage("tmpfs")]
        .into_iter()
        .any(skip_unless)
    {
        return;
    }
    let tmp = temp_dir();
    let out = Cmd::new(eqcheck())
        .args([
            "--tree", "basic", "--fs", "tmpfs", "--sets", "sizes", "--keep",
        ])
        .env("TMPDIR", tmp.path())
        .output();
    assert_eq!(out.code, Some(0), "{out}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("--keep does not keep basic@tmpfs")
            && said.contains("eqcheck trees build basic --fs tmpfs --into DIR"),
        "{out}"
    );
    assert!(
        std::fs::read_dir(tmp.path()).unwrap().next().is_none(),
        "temp folder not emptied"
    );
}

/// On exFAT a time inside its range is kept as given, even one set alone (the
/// FUSE driver keeps neither time when the other is left out), and one outside it
/// is said with the range, not clamped silently.
#[test]
fn exfat_keeps_the_times_it_can_hold_and_names_those_it_cannot() {
    let needs = [
        Capability::Root,
        Capability::PrivateMounts,
        Capability::FileSystemImage("exfat"),
    ];
    if needs.into_iter().any(skip_unless) {
        return;
    }
    let scratch = temp_dir();
    let spec = scratch.path().join("times.tree");
    std::fs::write(
        &spec,
        "file kept mtime=@1000000000\nfile early mtime=1960-01-01T00:00:00Z\n",
    )
    .unwrap();
    let script = r#"
set -u
"$EQCHECK" trees build "$SPEC" --fs exfat --into "$DIR/image" 2>"$DIR/said" || exit 10
echo "kept=$(stat -c %Y "$DIR/image/mnt/tree/kept")"
"$EQCHECK" trees unmount "$DIR/image" || exit 12
"#;
    let out = Cmd::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", script])
        .env("EQCHECK", eqcheck())
        .env("SPEC", &spec)
        .env("DIR", scratch.path())
        .output();
    assert_eq!(out.code, Some(0), "{out}");
    assert!(lossy(&out.stdout).contains("kept=1000000000"), "{out}");
    let said = std::fs::read_to_string(scratch.path().join("said")).unwrap();
    assert!(
        said.contains("mtime 1960-01-01T00:00:00Z: exfat holds times from 1980-01-01T00:00:00Z"),
        "{said}\n{out}"
    );
}
