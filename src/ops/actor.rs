//! Who an operator action is recorded as: the OS account running the process, looked up
//! from its user id, never from an environment variable (which anyone can set to
//! anything). Plus the host, so an audit entry says where the action came from.

use crate::authority::config::host_name;

/// `name@host` for the account running this process: its user id's name in
/// `/etc/passwd`, else `uid N`; `operator@host` where no user id can be read.
#[must_use]
pub fn os_account() -> String {
    let user = process_uid().map_or_else(
        || "operator".to_owned(),
        |uid| {
            std::fs::read_to_string("/etc/passwd")
                .ok()
                .and_then(|passwd| account_name(&passwd, uid))
                .unwrap_or_else(|| format!("uid {uid}"))
        },
    );
    format!("{user}@{}", host_name())
}

/// This process's user id: the owner of its own `/proc/self` entry (Linux), if readable.
fn process_uid() -> Option<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata("/proc/self").ok().map(|m| m.uid())
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// The name `passwd` (the text of `/etc/passwd`) gives user id `uid`.
fn account_name(passwd: &str, uid: u32) -> Option<String> {
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let id: u32 = fields.nth(1)?.parse().ok()?;
        (id == uid && !name.is_empty()).then(|| name.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_comes_from_the_user_id() {
        let passwd =
            "root:x:0:0:root:/root:/bin/bash\n# comment\nops:x:1001:1001::/home/ops:/bin/sh\n";
        assert_eq!(account_name(passwd, 1001).as_deref(), Some("ops"));
        assert_eq!(account_name(passwd, 0).as_deref(), Some("root"));
        assert_eq!(account_name(passwd, 7), None);
    }

    #[test]
    fn this_process_has_an_account() {
        let actor = os_account();
        assert!(actor.contains('@'), "{actor}");
        assert!(!actor.starts_with('@'));
    }
}
