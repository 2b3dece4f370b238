//! The build cache: `builds/COMMIT/KEY/` in eqcheck's folder of the user's cache
//! folder, holding the built program (under its own file name, which arms and
//! flag-set choice look at) and `recipe.txt` saying how it was built. KEY is a
//! digest of the build command and the program's path, so that another `[build]`
//! never takes this one's result. An entry appears whole or not at all: it is
//! filled in a staging folder beside it and renamed into place.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::BuildError;

/// The cache folder eqcheck's builds go in. Computed from the environment, as
/// each OS places caches, rather than with a crate for these few lines:
/// `$XDG_CACHE_HOME` when set to an absolute path (on every OS, so tests and CI
/// can point it anywhere), else `~/Library/Caches` on macOS, `%LOCALAPPDATA%` on
/// Windows and `~/.cache` elsewhere.
fn root() -> Option<PathBuf> {
    let absolute = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|path| path.is_absolute())
    };
    let base = absolute("XDG_CACHE_HOME").or_else(|| {
        if cfg!(windows) {
            absolute("LOCALAPPDATA")
        } else if cfg!(target_os = "macos") {
            absolute("HOME").map(|home| home.join("Library/Caches"))
        } else {
            absolute("HOME").map(|home| home.join(".cache"))
        }
    })?;
    Some(base.join("eqcheck").join("builds"))
}

/// One commit built one way.
pub(super) struct Entry {
    pub path: PathBuf,
}

/// The entry for `commit` built by `command` into `program`.
pub(super) fn entry(commit: &str, command: &[String], program: &str) -> Result<Entry, BuildError> {
    let root = root().ok_or(BuildError::NoCacheFolder)?;
    Ok(Entry {
        path: root.join(commit).join(key(command, program)),
    })
}

/// Sixteen hex digits of a digest of the command's words and the program's path,
/// each ended with NUL so that no two recipes run together into the same bytes.
fn key(command: &[String], program: &str) -> String {
    let mut digest = Sha256::new();
    for word in command {
        digest.update(word.as_bytes());
        digest.update([0]);
    }
    digest.update([0]);
    digest.update(program.as_bytes());
    digest.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The program's file name in an entry.
fn file_name(program: &str) -> &str {
    program.rsplit(['/', '\\']).next().unwrap_or(program)
}

impl Entry {
    /// The cached program, when this commit was built this way before.
    pub fn lookup(&self, program: &str) -> Option<PathBuf> {
        let found = self.path.join(file_name(program));
        found.is_file().then_some(found)
    }

    /// Copies the built program into the entry and gives the copy's path. When
    /// another run stored the same entry meanwhile, its copy is as good.
    pub fn store(
        &self,
        built: &Path,
        command: &[String],
        program: &str,
    ) -> Result<PathBuf, BuildError> {
        let error = |path: &Path| {
            let path = path.to_path_buf();
            move |source| BuildError::Cache { path, source }
        };
        let commit_folder = self
            .path
            .parent()
            .expect("an entry is inside its commit's folder");
        std::fs::create_dir_all(commit_folder).map_err(error(commit_folder))?;
        let staging = tempfile::Builder::new()
            .prefix(".staging-")
            .tempdir_in(commit_folder)
            .map_err(error(commit_folder))?;
        let copy = staging.path().join(file_name(program));
        std::fs::copy(built, &copy).map_err(error(&copy))?;
        let recipe = format!(
            "command: {}\nprogram: {program}\n",
            shell_words::join(command)
        );
        let recipe_path = staging.path().join("recipe.txt");
        std::fs::write(&recipe_path, recipe).map_err(error(&recipe_path))?;
        // tempdir_in makes a folder only its owner may enter; the arms may run as
        // another user, and a cache is no secret.
        crate::cleanup::open_to_others(staging.path()).map_err(error(staging.path()))?;
        match std::fs::rename(staging.path(), &self.path) {
            Ok(()) => {
                // Renamed away: nothing left for the staging folder to remove.
                let _ = staging.keep();
            }
            Err(_) if self.lookup(program).is_some() => {}
            Err(source) => {
                return Err(BuildError::Cache {
                    path: self.path.clone(),
                    source,
                })
            }
        }
        Ok(self.path.join(file_name(program)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_build_or_program_is_another_entry() {
        let words = |line: &str| shell_words::split(line).unwrap();
        let cargo = key(&words("cargo build --release"), "target/release/w");
        assert_eq!(cargo.len(), 16);
        assert_eq!(
            cargo,
            key(&words("cargo build --release"), "target/release/w")
        );
        assert_ne!(cargo, key(&words("cargo build"), "target/release/w"));
        assert_ne!(
            cargo,
            key(&words("cargo build --release"), "target/debug/w")
        );
        // Words do not run together.
        assert_ne!(key(&words("a bc"), "p"), key(&words("ab c"), "p"));
        assert_eq!(file_name("target/release/w"), "w");
        assert_eq!(file_name("w"), "w");
    }
}
