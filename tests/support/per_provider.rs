//! [`per_provider!`]: one `#[test]` per case per store provider, so a failure names its case
//! and its provider (`memory::<case>`, `sqlite::<case>`, `postgres::<case>`). Each test
//! gets a fresh [`Harness`](super::Harness) and drops it (temp dir, database) at its end.
//! A provider is added here once, for every suite.
//!
//! A case is anything callable with `&dyn Harness`, named relative to the module the macro
//! is invoked in:
//! - `per_provider! { leases::a_case, work::another }` calls `leases::a_case`, …;
//! - `per_provider! { a_case, another }` calls the module's own `a_case`, …;
//! - `per_provider! { name => |h: &dyn Harness| run("file", h) }` names a test for an
//!   expression (one test per fixture file).

macro_rules! per_provider {
    (@provider $provider:ident; $($test:ident => $run:expr),*) => {
        mod $provider {
            $(
                #[test]
                fn $test() {
                    let harness: Box<dyn crate::support::Harness> = crate::support::$provider();
                    ($run)(&*harness);
                }
            )*
        }
    };
    ($($module:ident :: $case:ident),* $(,)?) => {
        per_provider!($($case => super::$module::$case),*);
    };
    ($($case:ident),* $(,)?) => {
        per_provider!($($case => super::$case),*);
    };
    ($($test:ident => $run:expr),* $(,)?) => {
        per_provider!(@provider memory; $($test => $run),*);
        per_provider!(@provider sqlite; $($test => $run),*);
        #[cfg(feature = "postgres")]
        per_provider!(@provider postgres; $($test => $run),*);
    };
}
