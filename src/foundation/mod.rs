//! Small helpers that know nothing of leases, work or stores, one file each: who and where
//! this process runs (`actor`: the operator account and the host name; `process`: the
//! process mark that tells a crashed authority from a live one), reading files an operator
//! hands a command (`file_input`: bounded reads; `toml_file`: located errors and the
//! nearest valid name), instants and durations for people (`timefmt`), table cells from
//! untrusted text (`text_cell`), one progress line on stderr (`progress`), cron
//! expressions in a time zone (`cron`) and what a caught panic said (`panic`). Every layer
//! may use them; they use nothing but the other foundations.

pub mod actor;
pub mod cron;
pub mod file_input;
pub mod panic;
pub mod process;
pub mod progress;
pub mod text_cell;
pub mod timefmt;
pub mod toml_file;
