//! The demo keys drive an embedded cluster through its control seam, and the help (demo on)
//! lists every binding.

use std::sync::{Arc, Mutex};

use crossterm::event::KeyCode;
use leasehold::cluster::control::{ClusterControl, DemoAuthority, DemoState, Outcome};
use leasehold::tui::app::AppOptions;
use leasehold::tui::harness::Harness;
use leasehold::tui::theme::Theme;

use super::{fixture, options, screen};

#[derive(Default)]
struct FakeCluster {
    calls: Mutex<Vec<String>>,
}

impl FakeCluster {
    /// Records a control call; the fake never refuses.
    #[allow(clippy::unnecessary_wraps)] // every control answers an Outcome
    fn call(&self, what: String) -> Outcome {
        self.calls.lock().unwrap().push(what.clone());
        Ok(what)
    }
}

impl ClusterControl for FakeCluster {
    fn authorities(&self) -> Vec<DemoAuthority> {
        vec![
            DemoAuthority {
                id: "auth-a".into(),
                build: "v1.4.0".into(),
                state: DemoState::Running,
                clock_offset_ms: 0,
            },
            DemoAuthority {
                id: "auth-b".into(),
                build: "v1.4.0".into(),
                state: DemoState::Paused,
                clock_offset_ms: 0,
            },
        ]
    }
    fn kill(&self, id: &str) -> Outcome {
        self.call(format!("kill {id}"))
    }
    fn pause(&self, id: &str) -> Outcome {
        self.call(format!("pause {id}"))
    }
    fn resume(&self, id: &str) -> Outcome {
        self.call(format!("resume {id}"))
    }
    fn add_authority(&self) -> Outcome {
        self.call("add".into())
    }
    fn deploy(&self, compatible: bool) -> Outcome {
        self.call(format!("deploy compatible={compatible}"))
    }
    fn skew(&self, id: &str, offset_ms: i64) -> Outcome {
        self.call(format!("skew {id} {offset_ms}"))
    }
    fn scenario(&self) -> String {
        "failover seed=7".into()
    }
}

#[test]
fn demo_keys_drive_the_cluster() {
    let f = fixture();
    let cluster = Arc::new(FakeCluster::default());
    let mut h = Harness::new(
        f.store.clone(),
        AppOptions {
            demo: true,
            ..options()
        },
        Theme::builtin("dark").unwrap(),
        Some(cluster.clone()),
        120,
        30,
    );
    // Away from the authorities view, a key opens a picker of the authorities it fits.
    h.press('K');
    assert!(
        screen(&h).contains("kill which authority?"),
        "{}",
        screen(&h)
    );
    h.press('2');
    h.press('2');
    assert!(screen(&h).contains("paused"), "demo state shows");
    h.press('K');
    h.key(KeyCode::Down);
    h.press('P');
    h.press('R');
    h.press('A');
    h.press('B');
    assert!(screen(&h).contains("incompatible"), "{}", screen(&h));
    h.press('2');
    h.press('X');
    h.type_text("-1500");
    h.key(KeyCode::Enter);
    assert_eq!(
        *cluster.calls.lock().unwrap(),
        [
            "kill auth-b",
            "kill auth-a",
            "pause auth-b",
            "resume auth-b",
            "add",
            "deploy compatible=false",
            "skew auth-b -1500"
        ]
    );
    assert!(screen(&h).contains("demo failover seed=7"));
}

#[test]
fn help_lists_every_binding() {
    let f = fixture();
    let h = Harness::new(
        f.store.clone(),
        AppOptions {
            demo: true,
            ..options()
        },
        Theme::builtin("dark").unwrap(),
        Some(Arc::new(FakeCluster::default())),
        80,
        24,
    );
    let entries = leasehold::tui::views::help::entries(&h.app);
    for b in leasehold::tui::keymap::bindings() {
        assert!(
            entries
                .iter()
                .any(|e| e.1 == b.label() && e.2.starts_with(b.help)),
            "{} missing from help",
            b.help
        );
    }
}
