//! The embedded memory cluster (SPEC §6).
