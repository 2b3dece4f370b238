//! The Linux watch against a real tree: every kind of change an arm can make is
//! seen and named, and reading the tree is not a change.

use std::path::Path;

use super::linux::{start, why_not, TreeWatch};
use super::Drained;

#[test]
fn every_kind_of_change_is_seen_and_reading_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let at = |p: &str| dir.path().join(p);
    std::fs::create_dir_all(at("a/deep")).unwrap();
    std::fs::write(at("a/deep/f"), b"x").unwrap();
    std::fs::write(at("g"), b"y").unwrap();
    let mut watch = start(dir.path()).unwrap();
    assert_eq!(watch.folders(), 3);
    // Reading (listing, stat, opening and reading a file) is no change.
    let _ = std::fs::read_dir(at("a/deep")).unwrap().count();
    let _ = std::fs::read(at("a/deep/f")).unwrap();
    assert_eq!(watch.drain(), Drained::Quiet);
    let changed = |watch: &mut TreeWatch, change: &dyn Fn(), expected: &[&str]| {
        change();
        match watch.drain() {
            Drained::Changed(seen) => assert!(
                expected.iter().all(|e| seen.iter().any(|s| s == e)),
                "{expected:?} not all in {seen:?}"
            ),
            other => panic!("{expected:?}: {other:?}"),
        }
    };
    use std::os::unix::fs::PermissionsExt;
    changed(
        &mut watch,
        &|| std::fs::write(at("a/deep/f"), b"xx").unwrap(),
        &["written to or mtime set: a/deep/f"],
    );
    changed(
        &mut watch,
        &|| std::fs::write(at("a/new"), b"").unwrap(),
        &["created a/new"],
    );
    changed(
        &mut watch,
        &|| std::fs::remove_file(at("a/new")).unwrap(),
        &["removed a/new"],
    );
    changed(
        &mut watch,
        &|| std::fs::rename(at("g"), at("a/g")).unwrap(),
        &["moved away g", "moved in a/g"],
    );
    changed(
        &mut watch,
        &|| std::fs::set_permissions(at("a/g"), std::fs::Permissions::from_mode(0o600)).unwrap(),
        &["mode, owner, links or ctime changed: a/g"],
    );
    changed(
        &mut watch,
        &|| {
            let file = std::fs::File::options()
                .write(true)
                .open(at("a/g"))
                .unwrap();
            file.set_modified(std::time::SystemTime::UNIX_EPOCH)
                .unwrap();
        },
        &["written to or mtime set: a/g"],
    );
    assert_eq!(watch.drain(), Drained::Quiet);
}

#[test]
fn the_root_itself_moved_away_or_removed_is_seen() {
    let outer = tempfile::tempdir().unwrap();
    let root = outer.path().join("tree");
    std::fs::create_dir(&root).unwrap();
    let mut watch = start(&root).unwrap();
    std::fs::rename(&root, outer.path().join("moved")).unwrap();
    assert_eq!(watch.drain(), Drained::Changed(vec!["moved away .".into()]));
    let mut watch = start(&outer.path().join("moved")).unwrap();
    std::fs::remove_dir(outer.path().join("moved")).unwrap();
    match watch.drain() {
        Drained::Changed(seen) => assert!(seen.contains(&"removed .".to_string()), "{seen:?}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_watch_that_cannot_start_says_where_and_why_and_names_the_limit_it_ran_out_of() {
    let limit = std::fs::read_to_string("/proc/sys/fs/inotify/max_user_watches").unwrap();
    assert_eq!(
        why_not(Path::new(""), "NOSPC", 7),
        format!(
            "the inotify watch limit (fs.inotify.max_user_watches = {}) is too low for the tree: it ran out after 7 folders",
            limit.trim()
        )
    );
    assert_eq!(
        why_not(Path::new("a/b"), "Permission denied", 7),
        "cannot watch a/b: Permission denied"
    );
    assert_eq!(
        why_not(Path::new(""), "Permission denied", 0),
        "cannot watch .: Permission denied"
    );
}

#[test]
fn a_drain_names_each_change_once_and_at_most_ten() {
    let dir = tempfile::tempdir().unwrap();
    let at = |p: &str| dir.path().join(p);
    std::fs::write(at("x"), b"").unwrap();
    std::fs::write(at("y"), b"").unwrap();
    let mut watch = start(dir.path()).unwrap();
    // Not one after the other, so the kernel does not merge the two events of x.
    std::fs::write(at("x"), b"1").unwrap();
    std::fs::write(at("y"), b"1").unwrap();
    std::fs::write(at("x"), b"2").unwrap();
    assert_eq!(
        watch.drain(),
        Drained::Changed(vec![
            "written to or mtime set: x".into(),
            "written to or mtime set: y".into()
        ])
    );
    let names: Vec<String> = (0..12).map(|i| format!("new{i:02}")).collect();
    for name in &names {
        std::fs::File::create(at(name)).unwrap();
    }
    let shown: Vec<String> = names[..10].iter().map(|n| format!("created {n}")).collect();
    assert_eq!(watch.drain(), Drained::Changed(shown));
    assert_eq!(
        watch.drain(),
        Drained::Quiet,
        "the rest was read and dropped"
    );
}
