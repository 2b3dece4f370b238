//! Mount points inside a tree. A folder with something mounted on it is listed by
//! its parent with the inode of the folder underneath (`d_ino`), while a stat
//! says the mounted root's inode (`st_ino`), and for a tmpfs another device too:
//! an engine that took the inode or device from the listing, or from the parent,
//! would count or cross the mount differently. Here a tmpfs and a bind mount (the
//! same device, another folder's inode) sit inside a tree; the fast engine must
//! print the reference's bytes, and both GNU du's lines, with and without `-x`,
//! `--inodes` and `-L`, and with the mounted folder also given as an operand of
//! its own; with `-x` the fast engine must not enter the tmpfs at all.

use std::ffi::OsString;
use std::fs;
use std::os::unix::fs::{DirEntryExt, MetadataExt};
use std::path::{Path, PathBuf};

use eqcheck::walk::{list_counted, Contents, Engine, ListOptions};

use crate::util::{all_pass, lossy, run_sorted, skip_unless, temp_dir, Capability, Mount};
use crate::walk::{all_cases, me, walk};

/// The sets run on the tree alone: `-x` and `--inodes` each alone and together,
/// and `-L`, under which the bound folder and its source are one folder.
const TREE_SETS: &str = " | -a | -x | -a -x | --inodes -a | -x --inodes -a | -x -a -b
    | -L -a | -L -x -a | -x -s";

/// The sets run with a mounted folder as an operand beside the tree, where du
/// counts it once, by its device and inode.
const OPERAND_SETS: &str = " | -a | -a -x | --inodes -a | -L -a";

/// A tree with a tmpfs at `r/mnt` and `r/src` bound at `r/bound`. The mounts are
/// fields before the folder, so they are unmounted before it is removed.
struct MountedTree {
    _tmpfs: Mount,
    _bound: Mount,
    dir: tempfile::TempDir,
}

impl MountedTree {
    fn root(&self) -> PathBuf {
        self.dir.path().join("r")
    }

    fn at(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }
}

/// Builds the tree and mounts; None when this process may not mount (said by
/// `skip_unless`).
fn mounted_tree() -> Option<MountedTree> {
    if skip_unless(Capability::MountTmpfs) {
        return None;
    }
    let dir = temp_dir();
    let root = dir.path().join("r");
    for folder in ["mnt", "src/deeper", "bound"] {
        fs::create_dir_all(root.join(folder)).expect("mkdir");
    }
    fs::write(root.join("a"), [1u8; 7000]).expect("write");
    fs::write(root.join("src/h"), [4u8; 5000]).expect("write");
    fs::write(root.join("src/deeper/i"), [5u8; 300]).expect("write");
    // Under the mount point, hidden by the tmpfs: never listed by anyone.
    fs::write(root.join("mnt/hidden"), [6u8; 100]).expect("write");
    let tmpfs = Mount::tmpfs(&root.join("mnt")).unwrap_or_else(|e| panic!("{e}"));
    fs::create_dir(root.join("mnt/sub")).expect("mkdir in tmpfs");
    fs::write(root.join("mnt/f"), [2u8; 9000]).expect("write in tmpfs");
    fs::write(root.join("mnt/sub/g"), [3u8; 20000]).expect("write in tmpfs");
    let bound =
        Mount::bind(&root.join("src"), &root.join("bound")).unwrap_or_else(|e| panic!("{e}"));
    Some(MountedTree {
        _tmpfs: tmpfs,
        _bound: bound,
        dir,
    })
}

/// The inode `root`'s listing gives `name`, and the inode and device a stat gives.
fn listed_and_statted(root: &Path, name: &str) -> (u64, u64, u64) {
    let listed = fs::read_dir(root).expect("list the root");
    let entry = listed
        .map(|e| e.expect("an entry"))
        .find(|e| e.file_name() == name)
        .unwrap_or_else(|| panic!("{name} is listed"));
    let meta = fs::symlink_metadata(root.join(name)).expect("lstat");
    (entry.ino(), meta.ino(), meta.dev())
}

#[test]
fn mount_points_inside_a_tree_print_what_the_reference_and_du_print() {
    let Some(tree) = mounted_tree() else {
        return;
    };
    let root = tree.root();
    let root_dev = fs::metadata(&root).expect("stat").dev();
    // The case under test is really there: each mount point's listed inode is not
    // the one its stat says; the tmpfs is another device, the bind mount is not.
    let (listed, statted, dev) = listed_and_statted(&root, "mnt");
    assert_ne!(listed, statted, "the tmpfs root has the listed inode");
    assert_ne!(dev, root_dev, "the tmpfs is not a separate device");
    let (listed, statted, dev) = listed_and_statted(&root, "bound");
    assert_ne!(listed, statted, "the bind mount has the listed inode");
    assert_eq!(dev, root_dev, "the bind mount is on another device");
    let mut cases = all_cases(TREE_SETS, &[&root], &me());
    for mounted in ["mnt", "bound", "mnt/sub"] {
        let mounted = tree.at(mounted);
        for operands in [[root.as_path(), &mounted], [&mounted, &root]] {
            cases.extend(all_cases(OPERAND_SETS, &operands, &me()));
        }
    }
    all_pass(cases);
}

#[test]
fn one_file_system_does_not_enter_a_mounted_folder() {
    let Some(tree) = mounted_tree() else {
        return;
    };
    let root = tree.root();
    let one_fs = ListOptions {
        follow_symlinks: false,
        one_file_system: true,
    };
    let operands = [OsString::from(&root)];
    let (walked, census) = list_counted(Engine::Fast, &operands, one_fs);
    let census = census.expect("the Linux fast engine counts a census");
    let Contents::Listed { entries, .. } = &walked[0].contents else {
        panic!("the root is not listed: {:?}", walked[0]);
    };
    let mnt = entries
        .iter()
        .find(|e| e.name == "mnt")
        .expect("mnt listed");
    assert!(matches!(mnt.contents, Contents::None), "-x entered {mnt:?}");
    // r: a, mnt, src, bound; src and bound: h, deeper; deeper: i.
    assert_eq!(census.returned(), 10, "{census:?}\n{walked:?}");
    let mounted = tree.at("mnt").display().to_string();
    let under = |lines: &[Vec<u8>]| lines.iter().filter(|l| lossy(l).contains(&mounted)).count();
    let (with, all) = run_sorted(&walk(&me(), "fast", "-a", &[&root]), b'\n');
    let (without, kept) = run_sorted(&walk(&me(), "fast", "-x -a", &[&root]), b'\n');
    assert_eq!(under(&all), 4, "mnt, mnt/f, mnt/sub, mnt/sub/g\n{with}");
    assert_eq!(under(&kept), 0, "-x printed the mount\n{without}");
}
