//! The `HOME` kept from run to run only while no run changed it.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::Duration;

use super::fresh_home;
use crate::matrix::exec::{ArmEnvironment, ArmUser};

fn env() -> ArmEnvironment {
    let uid = rustix::process::geteuid().as_raw();
    ArmEnvironment::pinned(ArmUser::Invoker { uid }, Duration::from_secs(5))
}

/// The home `fresh_home` hands out in `dir`, checked to be as made (an empty
/// folder, mode 0700, owned by eqcheck), then marked with a modification time of
/// 2001, which `fresh_home` does not look at: whether it is still there tells a
/// home kept from one made anew. Whether the home was marked before.
fn handed_out(dir: &Path) -> bool {
    let (env, home) = fresh_home(&env(), dir).unwrap();
    let set = |name: &str| {
        env.vars
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(set("HOME"), Some(home.clone().into_os_string()));
    let meta = std::fs::symlink_metadata(&home).unwrap();
    assert!(meta.is_dir());
    assert_eq!(meta.permissions().mode() & 0o7777, 0o700);
    assert_eq!(meta.uid(), rustix::process::geteuid().as_raw());
    assert_eq!(std::fs::read_dir(&home).unwrap().count(), 0);
    assert_eq!(
        rustix::fs::llistxattr_query(&home).unwrap(),
        0,
        "no extended attributes"
    );
    let marked = std::time::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    let kept = meta.modified().unwrap() == marked;
    let folder = std::fs::File::open(&home).unwrap();
    folder.set_modified(marked).unwrap();
    kept
}

#[test]
fn a_home_left_as_made_is_kept_for_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    assert!(!handed_out(dir.path()), "the first home is made");
    assert!(handed_out(dir.path()), "an unchanged home is kept");
    assert!(handed_out(dir.path()), "and kept again");
}

#[test]
fn a_home_a_run_changed_is_made_anew() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let changes: [(&str, &dyn Fn()); 4] = [
        ("a file written in it", &|| {
            std::fs::write(home.join(".cache"), b"x").unwrap()
        }),
        ("a folder made in it", &|| {
            std::fs::create_dir(home.join(".config")).unwrap()
        }),
        ("its mode changed", &|| {
            std::fs::set_permissions(&home, std::fs::Permissions::from_mode(0o755)).unwrap()
        }),
        ("it replaced by a link", &|| {
            std::fs::remove_dir(&home).unwrap();
            std::os::unix::fs::symlink(dir.path(), &home).unwrap();
        }),
    ];
    for (what, change) in changes {
        handed_out(dir.path());
        change();
        assert!(!handed_out(dir.path()), "made anew after {what}");
    }
    handed_out(dir.path());
    let xattr = rustix::fs::lsetxattr(&home, "user.eqcheck", b"x", rustix::fs::XattrFlags::empty());
    if xattr.is_err() {
        eprintln!("SKIPPED a home with an extended attribute: the temp folder's file system refuses user xattrs");
        assert!(std::env::var_os("EQCHECK_REQUIRE_ALL").is_none_or(|v| v != "1"));
        return;
    }
    assert!(!handed_out(dir.path()), "made anew after an xattr was set");
}
