//! [`store_conformance_suite!`](crate::store_conformance_suite): every case of the suite, one
//! `#[test]` each for a given harness. The list is here once, so a case added to a
//! submodule and listed here runs on every provider, in this crate and outside it.

/// One `#[test]` per conformance case, in a module named `$provider`:
/// `store_conformance_suite!(my_store => crate::my_harness)` gives `my_store::<case>`, each
/// calling the case with a fresh `Box<dyn Harness>` from `crate::my_harness()` (a path
/// or closure that resolves inside the generated module) and dropping it at its end.
#[macro_export]
macro_rules! store_conformance_suite {
    ($provider:ident => $harness:expr) => {
        $crate::store_conformance_suite! {
            @cases $provider => $harness;
            // what a provider promises
            capabilities::every_provider_keeps_the_work_model_and_says_how_far_it_reaches,
            capabilities::a_commit_feed_pushes_exactly_the_committed_revisions,
            // leases and fencing
            leases::acquire_never_grants_over_a_live_lease,
            leases::racing_acquirers_exactly_one_wins,
            leases::generations_strictly_increase_across_release_expiry_and_reopen,
            leases::wrong_token_cannot_renew_or_release,
            leases::expiry_without_reclaim_does_not_fence,
            leases::reclaim_fences_the_old_owner,
            leases::ttl_is_clamped_into_a_bounded_window,
            leases::owner_cap_is_enforced_and_renewal_is_exempt,
            leases::lapsed_renewal_counts_against_the_owner_cap,
            leases::self_handoff_is_refused,
            leases::handoff_is_atomic_and_fences_the_giver,
            leases::checkpoint_survives_expiry_and_is_dropped_on_release,
            leases::keyed_mutation_applies_once_and_replays_across_reopen,
            leases::idempotency_keys_are_namespaced_by_owner_and_verb,
            // what becomes due next
            horizon::the_horizon_puts_each_due_instant_in_its_slice,
            // replay of the durable history
            replay::replay_shows_the_owner_before_and_after_a_failover,
            // durable work
            work_claims::racing_claimers_exactly_one_wins,
            work_claims::claim_batch_respects_limit_and_eligibility,
            work_claims::a_claim_of_any_size_takes_what_is_there,
            work_claims::lapsed_claims_are_reclaimed_before_the_backlog,
            work_fencing::expiry_without_reclaim_does_not_fence_work,
            work_fencing::a_lapse_others_see_is_still_its_owners,
            work_fencing::the_claimers_reclaim_backoff_sets_the_grace,
            work_fencing::reclaim_fences_the_old_work_owner,
            work_fencing::unrecorded_attempt_is_uncertain_and_keeps_its_keys,
            work::retry_state_survives_reopen,
            work::a_retry_floor_holds_the_retry_back,
            work::terminal_items_answer_already_terminal,
            work::group_commit_refuses_only_the_stale_entry,
            work_claims::claim_leases_are_clamped_into_a_bounded_window,
            work_enqueue::enqueue_is_idempotent_per_id,
            keys::a_known_key_under_another_id_is_a_duplicate,
            keys::another_effect_under_a_known_key_is_a_conflict,
            keys::a_batch_holding_a_key_twice_enqueues_it_once,
            keys::concurrent_offers_of_one_key_create_one_item,
            keys::a_store_holding_a_key_twice_is_reported_and_still_deduplicates,
            keys::an_offered_batch_answers_each_item,
            work_enqueue::concurrent_enqueues_are_each_committed_before_they_return,
            work_enqueue::a_large_batch_with_stored_ids_writes_only_the_new_ones,
            work_enqueue::texts_are_stored_exactly_as_given,
            work_enqueue::extreme_numbers_are_stored_exactly,
            // fair share of each claim batch, handler limits, priorities
            fair_claims::a_batch_under_a_deep_backlog_takes_every_lane,
            fair_claims::batches_of_one_rotate_over_the_lanes,
            fair_claims::claimers_sharing_a_handle_each_serve_every_lane,
            fair_claims::reclaims_come_first_then_the_lanes,
            fair_claims::a_lapse_in_its_grace_does_not_hold_up_one_past_it,
            fair_claims::lapses_of_a_handler_without_room_do_not_hold_up_anothers,
            fair_claims::a_handler_limit_caps_that_handler_only,
            fair_claims::a_handler_holding_more_waits_for_the_others,
            fair_claims::priorities_order_one_handlers_claims,
            fair_claims::lateness_per_lane_matches_the_items,
            fair_claims::claims_over_uneven_lanes_match_the_memory_reference,
            // a work item's checkpoint
            work_checkpoints::a_checkpoint_saved_under_the_claim_is_visible,
            work_checkpoints::a_stale_checkpoint_is_fenced_and_changes_nothing,
            work_checkpoints::a_checkpoint_is_carried_to_the_next_owner_after_a_lapse,
            work_checkpoints::a_checkpoint_is_kept_across_a_retry,
            work_checkpoints::a_checkpoint_is_cleared_when_the_item_ends,
            work_checkpoints::an_oversize_checkpoint_is_refused_and_changes_nothing,
            // poison pills: dead letters, requeue and discard
            dead_letters::a_poison_pill_ends_as_a_dead_letter,
            dead_letters::requeue_gives_a_fresh_budget_once,
            dead_letters::a_bulk_page_records_its_selection_with_each_change,
            dead_letters::discard_needs_a_reason_and_spares_success,
            dead_letters::another_builds_lapsed_claim_is_left_alone,
            // compatibility
            work::incompatible_items_are_never_claimed_and_stay_visible,
            compat_sets::a_set_claims_the_items_of_each_member_only,
            compat_sets::a_set_reclaims_lapsed_claims_of_its_members,
            // schedules
            schedules::one_firing_per_due_instant_across_pollers,
            schedules::catch_up_latest_after_an_outage,
            schedules::catch_up_all_after_an_outage,
            schedules::catch_up_last_n_after_an_outage,
            schedules::delay_schedule_fires_once,
            schedules::a_firing_carries_the_observers_key,
            schedules::two_observers_of_one_instant_create_one_firing,
            schedules::update_changes_the_next_firings_not_past_ones,
            schedules::a_cron_schedule_fires_at_its_zones_instants,
            schedule_control::a_paused_schedule_fires_nothing_and_resumes_into_its_catch_up,
            schedule_control::a_deleted_schedule_leaves_its_enqueued_firings,
            // a handler's fleet-wide pause and rate
            handler_control::a_paused_handlers_work_waits_until_it_is_resumed,
            handler_control::a_handler_not_yet_deployed_may_be_paused_and_a_bad_name_is_refused,
            handler_control::claimers_together_keep_a_handlers_rate,
            // events: dedup and journal
            events::every_dedup_outcome_and_a_monotone_journal,
            // retry policies and the errors of attempts
            attempt_errors::a_handlers_policy_spaces_its_retries,
            attempt_errors::a_handlers_cap_is_written_into_the_item,
            attempt_errors::attempt_errors_are_bounded_newest_first_and_outlive_a_requeue,
            attempt_errors::a_lapsed_attempt_is_recorded_by_its_takeover,
            attempt_errors::retention_removes_attempt_errors_with_their_item,
            // subscription cursors
            events::cursor_writes_are_fenced_and_monotone,
            events::cursor_resumes_from_the_durable_cursor_after_reopen,
            events::cursor_status_reads_the_same_on_every_provider,
            // store revision, paged reads and counts
            reads::every_commit_advances_the_revision,
            reads::paging_returns_every_row_exactly_once,
            reads::overview_counts_match_the_items,
            reads::claim_counts_match_the_claimed_items,
            reads::grants_through_a_revision_are_a_slice_of_the_history,
            // retention
            retention::trim_removes_only_what_is_past_the_policy,
            retention::an_event_id_past_its_dedup_window_is_accepted_again,
            retention::a_policy_outside_its_bounds_is_refused,
            // the authority registry: unique instance ids, incarnations, forget
            registry::starts_of_one_instance_differ_across_handles,
            registry::duplicate_registration_is_refused_while_the_holder_runs,
            registry::racing_registrations_exactly_one_wins,
            registry::a_superseded_incarnation_cannot_heartbeat,
            registry::forget_is_refused_while_running_and_allowed_when_gone,
            registry::a_crashed_holder_on_this_host_is_taken_over_at_once,
            registry::a_holder_that_may_still_run_keeps_its_id,
            release::release_moves_a_gone_authoritys_claims_to_new_generations_once,
            release::forget_waits_for_release_and_repeats_quietly,
            // what an authority publishes: the outcomes it holds in recovery
            published::published_recovery_reads_back_and_clears,
            published::published_recovery_is_bounded_with_a_count,
            published::a_superseded_incarnation_cannot_publish,
            published::held_outcomes_outlive_the_stop_until_release_or_forget,
            // failovers and refused writes, listed by time
            incidents::a_reclaim_after_expiry_is_a_failover,
            incidents::release_then_claim_and_handoff_are_not_failovers,
            incidents::a_refused_write_records_the_holder_then,
            incidents::a_write_to_a_missing_resource_is_recorded,
            incidents::the_window_excludes_older_rows_and_pages_newest_first,
            // copying a store
            // the chain over the history
            chain::every_commit_writes_a_link_that_recomputes,
            chain::a_trim_keeps_the_milestones_links_and_no_other,
            copy::a_busy_store_round_trips_through_the_provider,
            copy::a_copy_carries_on_where_the_source_stopped,
            copy::a_non_empty_target_is_refused,
        }
    };
    (@cases $provider:ident => $harness:expr; $($module:ident :: $case:ident),* $(,)?) => {
        mod $provider {
            $(
                #[test]
                fn $case() {
                    let harness: ::std::boxed::Box<dyn $crate::testing::Harness> = ($harness)();
                    $crate::testing::$module::$case(&*harness);
                }
            )*
        }
    };
}
