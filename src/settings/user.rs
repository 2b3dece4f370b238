//! Who the arms run as: as root, an unprivileged user (uid/gid 65534 unless
//! `--as-user` or the config's `as_user` names one) unless `--as-root`; otherwise
//! whoever runs eqcheck.

use super::resolve::SettingsError;
use super::Given;
use crate::matrix::exec::ArmUser;

/// The uid and gid arms run as by default when eqcheck runs as root: `nobody`.
#[cfg(unix)]
const UNPRIVILEGED_DEFAULT: u32 = 65534;

#[cfg(unix)]
pub fn running_as_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Elsewhere the arms run as whoever runs eqcheck.
#[cfg(not(unix))]
pub fn running_as_root() -> bool {
    false
}

/// Whoever runs eqcheck, for a command that runs as it would by hand (a probe's
/// lister): root as root, else the invoking user.
pub fn invoker() -> ArmUser {
    #[cfg(unix)]
    let uid = rustix::process::geteuid().as_raw();
    #[cfg(not(unix))]
    let uid = 1;
    match uid {
        0 => ArmUser::Root,
        uid => ArmUser::Invoker { uid },
    }
}

/// The arms' user; a name the system does not know is reported where it was given.
#[cfg(unix)]
pub fn arm_user(as_user: Option<&Given<String>>, as_root: bool) -> Result<ArmUser, SettingsError> {
    let uid = rustix::process::geteuid().as_raw();
    if uid != 0 {
        return match (as_root, as_user) {
            (false, None) => Ok(ArmUser::Invoker { uid }),
            _ => Err(SettingsError::NotRoot),
        };
    }
    if as_root {
        return Ok(ArmUser::Root);
    }
    let Some(wanted) = as_user else {
        return Ok(by_uid(UNPRIVILEGED_DEFAULT));
    };
    if let Ok(uid) = wanted.value.parse::<u32>() {
        return Ok(by_uid(uid));
    }
    uzers::get_user_by_name(&wanted.value)
        .map(|user| unprivileged(&user))
        .ok_or_else(|| SettingsError::at(wanted, format!("no such user `{}`", wanted.value)))
}

/// A uid the user database may not know runs with the same number as its gid.
#[cfg(unix)]
fn by_uid(uid: u32) -> ArmUser {
    uzers::get_user_by_uid(uid).map_or(
        ArmUser::Unprivileged {
            uid,
            gid: uid,
            name: format!("uid {uid}"),
        },
        |user| unprivileged(&user),
    )
}

#[cfg(unix)]
fn unprivileged(user: &uzers::User) -> ArmUser {
    ArmUser::Unprivileged {
        uid: user.uid(),
        gid: user.primary_group_id(),
        name: user.name().to_string_lossy().into_owned(),
    }
}

/// Elsewhere the arms run as whoever runs eqcheck.
#[cfg(not(unix))]
pub fn arm_user(as_user: Option<&Given<String>>, as_root: bool) -> Result<ArmUser, SettingsError> {
    match (as_root, as_user) {
        (false, None) => Ok(ArmUser::Invoker { uid: 1 }),
        _ => Err(SettingsError::NotRoot),
    }
}
