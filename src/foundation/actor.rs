//! Who an operator action is recorded as: the operating-system account running this
//! process, at this host (`alice@build-3`). The account comes from the kernel (the owner of
//! `/proc/self` is the process's user id) and the account database (`/etc/passwd`), never
//! from environment variables such as `USER`, which anyone can set to anything.

use std::os::unix::fs::MetadataExt;

/// `account@host` of this process, for the audit log.
#[must_use]
pub fn operator() -> String {
    format!("{}@{}", account(), host_name())
}

/// The account name of this process's user id; `uid N` when the account database has no
/// entry for it, `unknown` when the user id cannot be read.
#[must_use]
pub fn account() -> String {
    let Ok(meta) = std::fs::metadata("/proc/self") else {
        return "unknown".into();
    };
    let uid = meta.uid();
    std::fs::read_to_string("/etc/passwd")
        .ok()
        .and_then(|db| account_name(&db, uid))
        .unwrap_or_else(|| format!("uid {uid}"))
}

/// The name of `uid` in a `passwd(5)` database.
#[must_use]
pub fn account_name(passwd: &str, uid: u32) -> Option<String> {
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let id: u32 = fields.nth(1)?.parse().ok()?;
        (id == uid && !name.is_empty()).then(|| name.to_owned())
    })
}

/// The kernel's host name (`localhost` when it cannot be read): what authorities register
/// and audit entries name, read from the kernel rather than the `HOSTNAME` variable.
#[must_use]
pub fn host_name() -> String {
    ["/proc/sys/kernel/hostname", "/etc/hostname"]
        .iter()
        .find_map(|p| {
            std::fs::read_to_string(p)
                .ok()
                .map(|h| h.trim().to_owned())
                .filter(|h| !h.is_empty())
        })
        .unwrap_or_else(|| "localhost".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_name_of_a_uid() {
        let db = "root:x:0:0:root:/root:/bin/sh\n#comment\nalice:x:1000:1000::/home/a:/bin/sh\n";
        assert_eq!(account_name(db, 1000).as_deref(), Some("alice"));
        assert_eq!(account_name(db, 0).as_deref(), Some("root"));
        assert_eq!(account_name(db, 7), None);
    }

    #[test]
    fn this_process_has_an_account() {
        let actor = operator();
        assert!(actor.contains('@'), "{actor}");
        assert!(!actor.starts_with('@'), "{actor}");
    }
}
