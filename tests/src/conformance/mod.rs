//! The reactor conformance kit: cases every reactor must pass, driven
//! through its `AaReactorVTable` alone (no Rust-only types), so the same
//! cases check `reactor-mio`, `reactor-uring` and a third party's reactor
//! written in any language.
//!
//! # Using it
//!
//! Outside the workspace: the standalone program `reactor_kit`
//! ([`kit`]), which runs every case of [`CASES`] in its own process
//! against a library and prints executed, passed, skipped (by capability)
//! and failed; `cargo xtask conformance path/to/lib.so` builds and runs it.
//!
//! Every case cites the rules of `docs/abi/` it checks (its `rules` in
//! [`CASES`], from the case list below), and every rule there names its
//! cases; `cargo xtask check-abi-rules` fails if the two disagree. Every
//! assertion of a case names the rule it checks ([`rules`]: `ensure!`,
//! `ensure_eq!`, `ensure_ne!`), so a failure says what the case did, what
//! the rule requires, what the reactor did, and links the rule
//! (`docs/abi/<page>.md#<rule id>`).
//!
//! # Failures
//!
//! A case fails in one of three ways, and its message says which:
//!
//! - a rule failure (`R-IO-12 (docs/abi/io.md#r-io-12, ABI 1.0) violated.
//!   The case did: ... The rule requires: ... The reactor did: ...`): the
//!   reactor broke the rule. The kit's summary prints this first line; the
//!   rule's text (and, for a rule a later minor tightened, which minor the
//!   reactor is held to) follows in the details under `FAIL`. Statuses,
//!   errnos, opcodes, flags and poll bits are printed by name
//!   ([`rules::status`], [`rules::opcode_name`], [`harness::poll_bits`]).
//!   The harness's end-of-case checks ([`Loop::finish`]: R-LOOP-6, R-EV-3,
//!   R-LOOP-2) and a failing `create` (R-LOOP-1) fail the same way;
//! - a setup failure (`could not set up the case ...`, from
//!   [`setup_failed!`](crate::setup_failed)): a system call the kit makes
//!   for itself (`mmap`, `socketpair`, `fork`) failed; no rule was judged
//!   and the reactor is not blamed. It is the only panic a tier may raise
//!   (`cargo xtask check-abi-rules` rejects `panic!` and bare `assert!` in
//!   a tier);
//! - a harness failure: one of the harness's own checks (H1-H4 in
//!   [`harness`]: a constructor the case needs failed, a request that
//!   should be pending is not, a wait ran out of patience), naming the
//!   call and what it gave; the case's rules are printed with it.
//!
//! # Versions
//!
//! A reactor is checked against the rules of the ABI minor it implements
//! (its vtable's `iface_minor`): a case whose rules all came later is
//! skipped naming them ([`run_versioned`]), and a rule tightened after that
//! minor is checked as the earlier minor wrote it
//! ([`rules::tightened_for`]). Each rule's minors are in its page
//! (`*Since:*`) and in [`rules::RULES`].
//!
//! Inside a test binary: invoke [`reactor_conformance_tests!`](crate::reactor_conformance_tests) with an expression
//! that yields a [`Reactor`]; the macro expands to one `#[test]` per case,
//! grouped in modules named after the tiers:
//!
//! ```ignore
//! tests::reactor_conformance_tests!(
//!     tests::conformance::Reactor::load(std::path::Path::new("./libmy_reactor.so"))
//!         .unwrap_or_else(|e| panic!("{e}"))
//! );
//! ```
//!
//! # Tiers
//!
//! - [`lifecycle`]: create and destroy, `AA_E_BUSY` with live events,
//!   options (an unknown own or unprefixed key refused in one line of
//!   `err_buf` and not logged, another plugin's key ignored),
//!   `last_error_message`, the descriptor.
//! - [`timers`]: deadline order, one-shot and periodic, re-arm, cancel,
//!   a fresh clock before arming, a blocking `run_once` cut by the nearest
//!   timer.
//! - [`poll`]: readable and writable, `poll_set_interest` re-reports,
//!   interest 0 disarms, hang-up, owned descriptors.
//! - [`trigger`]: cross-thread wake-up, coalescing, hidden triggers.
//! - [`io`]: inline and pending requests, accept and connect, end of
//!   stream, reset peers, cancel, dispose and close of pending requests,
//!   `AA_IO_CLOSE`, independence and order of requests on one descriptor,
//!   re-entrant callbacks.
//! - [`liveness`]: `alive()`, `set_ref`, `AA_EVF_HIDDEN`.
//! - [`errors`]: AA-R8 (a failing call returns a negative status and never
//!   calls back), NULL arguments, bad descriptors, short structs.
//! - [`signal`] (`AA_CAP_SIGNAL`): delivery from `run_once`, coalescing,
//!   every watcher and every loop told, dispositions owned while watched
//!   and restored after, cancel, close, hidden watchers, refused signals.
//! - [`process`] (`AA_CAP_PROCESS`): exit codes and killing signals,
//!   reaping, zombies, pids that are not children, cancel, dispose.
//! - [`fs_watch`] (`AA_CAP_FS_WATCH`): renames and changes with names,
//!   watched files, missing paths, shared watches, cancel, dispose, the end
//!   of a watch whose directory is deleted.
//! - [`dns`] (`AA_CAP_DNS`): `localhost` per family, `.invalid` names,
//!   cancel, liveness, dispose then destroy, malformed lookups.
//! - [`dgram`] (ABI 1.1, `AA_CAP_IO_DGRAM`): `SENDTO`/`RECVFROM` over UDP
//!   and Unix datagram sockets (path, abstract and unnamed senders),
//!   truncation and message boundaries, `AA_IO_PEEK`, connected sockets
//!   and refused ports, cancel (buffer kept until the callback, no datagram
//!   lost) and dispose of a pending `RECVFROM`, misplaced peeks.
//! - [`file`](mod@file) (ABI 1.1, `AA_CAP_IO_FILE`, `AA_CAP_IO_FTRUNCATE`): open,
//!   statx against std's `Metadata`, fsync, mkdir, rename, unlink,
//!   truncate, with their errno results; cancel and dispose (no leaked
//!   descriptor).
//! - [`compat`]: a 1.0-sized `AaIoOp` is served and never read past;
//!   `instance_caps` within `caps`; 1.1 requests an instance lacks are
//!   `AA_E_UNSUPPORTED`.
//!
//! The capability of the 1.1 tiers is the *instance's*
//! ([`Loop::instance_caps`]: `caps`, only the 1.0 bits from a 1.0 reactor,
//! narrowed by `instance_caps`), as a host reads it; a case the instance
//! cannot run prints `SKIPPED` with the missing bits.
//!
//! Every case records its callbacks into a log, asserts exact sequences and
//! counts, and ends with [`Loop::finish`]: everything disposed, nothing
//! alive, nothing running afterwards, `destroy` returns `AA_OK` (the name
//! resolution cases, and the file case that disposes a pending open, allow
//! `AA_E_BUSY` for a while, as a host does: [`Loop::finish_when_idle`]). A case whose capability the reactor lacks
//! prints `SKIPPED` and why.

pub mod compat;
pub mod dgram;
pub mod dns;
pub mod errors;
pub mod fds;
pub mod file;
pub mod fs_watch;
pub mod harness;
pub mod io;
pub mod kit;
pub mod lifecycle;
pub mod liveness;
pub mod os;
pub mod plugin;
pub mod poll;
pub mod process;
pub mod requests;
pub mod rules;
pub mod signal;
pub mod timers;
pub mod trigger;

pub use harness::{
    note_skip, skip_without, take_skip, Ev, FireHandle, Loop, Rec, Submit, WakeHandle,
};
pub use plugin::{capture_log, LogRecord, Reactor};

/// One conformance case: where it lives, the rules of `docs/abi/` it
/// checks, and the function that runs it.
#[derive(Debug, Clone, Copy)]
pub struct Case {
    /// The tier (the module under `tests::conformance`).
    pub tier: &'static str,
    /// The case's function name, unique across tiers.
    pub name: &'static str,
    /// The rule ids (`R-TIMER-1`, ...) of `docs/abi/*.md` the case checks.
    pub rules: &'static [&'static str],
    /// Runs the case against a reactor; a failure panics.
    pub run: fn(&Reactor),
}

impl Case {
    /// `tier::name`, as the kit prints and filters it.
    pub fn path(&self) -> String {
        format!("{}::{}", self.tier, self.name)
    }

    /// Runs the case against `reactor` under the rules of the minor it
    /// implements ([`run_versioned`]).
    pub fn run_on(&self, reactor: &Reactor) {
        run_versioned(self.rules, self.name, self.run, reactor);
    }
}

/// Runs case `name`, which checks `rules`, against `reactor`, unless every
/// one of those rules came with an ABI minor after the one the reactor
/// implements ([`rules::implements`]): then the case is skipped with a
/// line naming the rules and their minor. A plugin is held to the rules of
/// the minor it declares, so a 1.0 binary that passed the 1.0 kit passes
/// every later 1.x kit.
pub fn run_versioned(
    rules: &'static [&'static str],
    name: &str,
    run: fn(&Reactor),
    reactor: &Reactor,
) {
    let minor = rules::implements(reactor);
    rules::set_current_minor(minor);
    rules::set_current_rules(rules);
    let newer = rules::newer_rules(rules, minor);
    if !rules.is_empty() && newer.len() == rules.len() {
        note_skip(
            0,
            format!(
                "SKIPPED {name}: rule of a later ABI minor, {}; reactor {:?} implements ABI 1.{minor}",
                newer.join(", "),
                reactor.name()
            ),
        );
        return;
    }
    run(reactor);
}

/// The list of every case, by tier, each with the rule ids it cites:
/// the single source of [`CASES`], of
/// [`reactor_conformance_tests!`](crate::reactor_conformance_tests) and of what `cargo xtask
/// check-abi-rules` compares with `docs/abi/`. It hands the list to the
/// macro named `$callback`.
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_case_list {
    ($callback:ident) => {
        $crate::$callback! {
            lifecycle {
                descriptor_names_a_reactor_of_this_abi ["R-LOAD-1"],
                unknown_interface_id_gives_null ["R-LOAD-2"],
                create_then_destroy_returns_ok ["R-LOOP-1"],
                destroy_with_a_live_event_returns_busy ["R-ERR-2", "R-LOOP-2"],
                run_once_on_an_empty_loop_returns_zero ["R-LOOP-1"],
                options_of_other_plugins_are_ignored ["R-OPT-1"],
                unknown_option_in_own_prefix_is_refused_with_its_name ["R-OPT-2", "R-OPT-4"],
                unprefixed_option_is_refused_with_how_to_write_it ["R-OPT-3", "R-OPT-4"],
                config_struct_size_too_small_is_invalid ["R-LOOP-3"],
                last_error_message_describes_the_last_failure ["R-ERR-2", "R-IO-12"],
                now_ns_advances_with_the_loop ["R-LOOP-4"],
                every_failure_sets_last_error_message ["R-ERR-2", "R-IO-12"],
                each_callback_gets_its_own_event_and_user_pointer ["R-EV-5"],
            }
            timers {
                timers_fire_in_deadline_order ["R-TIMER-1"],
                equal_durations_fire_in_arming_order ["R-TIMER-2"],
                one_shot_fires_once_then_is_inactive ["R-ERR-3", "R-TIMER-3"],
                periodic_fires_until_cancelled ["R-EV-1", "R-TIMER-3"],
                rearm_replaces_the_deadline_without_a_callback ["R-TIMER-4"],
                rearm_restarts_a_fired_one_shot ["R-TIMER-4"],
                cancel_reason_is_delivered_once_from_a_later_run_once ["R-EV-1"],
                cancel_inside_a_callback_is_delivered_by_a_later_iteration ["R-EV-1"],
                timer_armed_after_cpu_work_waits_its_full_duration ["R-TIMER-5"],
                blocking_run_once_returns_when_the_nearest_timer_is_due ["R-LOOP-5"],
                dispose_of_an_armed_timer_stops_it ["R-TIMER-6"],
                dispose_inside_its_own_callback_stops_a_periodic_timer ["R-EV-4", "R-TIMER-6"],
                close_of_an_armed_timer_gives_only_on_closed ["R-EV-2"],
                many_timers_fire_in_deadline_order ["R-TIMER-1", "R-TIMER-2"],
            }
            poll {
                pipe_read_end_reports_readable ["R-POLL-1"],
                socketpair_reports_writable ["R-POLL-1"],
                set_interest_reports_current_readiness_again ["R-POLL-2"],
                interest_zero_disarms_the_poll ["R-POLL-2"],
                cancel_of_a_poll_delivers_the_reason_once ["R-EV-1"],
                hang_up_is_reported ["R-POLL-5"],
                poll_and_request_on_one_fd_both_see_data ["R-POLL-6"],
                close_of_a_poll_owning_its_fd_closes_it ["R-POLL-7", "R-EV-2"],
                close_of_an_armed_poll_gives_only_on_closed ["R-EV-2"],
                cancelled_poll_is_rearmed_by_set_interest ["R-POLL-4"],
                readiness_is_not_reported_again_until_consumed ["R-POLL-3"],
                readiness_back_after_eagain_is_reported ["R-POLL-8"],
            }
            trigger {
                fire_from_another_thread_wakes_a_blocking_run_once ["R-TRIG-1"],
                fire_wakes_run_once_while_a_far_timer_is_armed ["R-TRIG-1"],
                fires_before_the_loop_runs_coalesce_into_one_callback ["R-TRIG-2"],
                fire_inside_the_callback_runs_it_again_in_a_later_iteration ["R-EV-4", "R-TRIG-2"],
                hidden_trigger_does_not_count_in_alive ["R-LOOP-7"],
                wake_from_another_thread_interrupts_run_once ["R-LOOP-8"],
                wake_ends_run_once_while_a_far_timer_is_armed ["R-LOOP-8"],
                cancel_of_a_trigger_delivers_the_reason_once ["R-EV-1", "R-TRIG-3"],
                close_of_a_trigger_gives_on_closed_and_no_more_callbacks ["R-EV-2", "R-TRIG-3"],
            }
            io {
                write_then_read_inline_on_a_socketpair ["R-IO-1"],
                read_waits_for_data_then_completes_once ["R-IO-2"],
                request_without_inline_completes_from_run_once ["R-IO-2"],
                write_waits_for_room_then_completes ["R-IO-2"],
                accept_and_connect_over_loopback_fill_the_peer_address ["R-IO-3"],
                connect_to_a_closed_port_fails ["R-IO-3"],
                read_at_end_of_stream_returns_zero ["R-IO-4"],
                end_of_stream_behind_a_short_read_is_still_delivered ["R-IO-4"],
                write_to_a_closed_peer_fails_with_epipe_or_econnreset ["R-IO-4"],
                cancel_of_a_pending_read_completes_once_with_the_reason ["R-EV-1", "R-IO-5"],
                cancel_after_completion_is_invalid ["R-ERR-3"],
                dispose_of_a_pending_read_never_calls_back ["R-EV-3", "R-IO-14"],
                close_of_a_pending_read_gives_ecanceled_then_on_closed ["R-IO-6"],
                io_close_completes_other_pending_requests_with_ecanceled ["R-IO-7"],
                reader_and_writer_on_one_fd_complete_independently ["R-IO-9"],
                pending_reads_on_one_fd_complete_in_fifo_order ["R-IO-10"],
                callback_may_submit_the_next_request_and_dispose_itself ["R-EV-4"],
                descriptor_reused_after_io_close_works ["R-IO-7"],
                requests_on_different_descriptors_start_in_submission_order ["R-IO-11"],
                disposed_pending_io_close_still_closes_its_descriptor_by_destroy ["R-IO-8"],
            }
            liveness {
                empty_loop_has_nothing_alive ["R-LOOP-6"],
                armed_timer_is_alive_until_it_fires ["R-LOOP-6"],
                set_ref_false_takes_an_event_out_of_alive ["R-LOOP-7"],
                hidden_timer_is_never_alive ["R-LOOP-7"],
                pending_request_is_alive_until_it_completes ["R-LOOP-6"],
                close_in_progress_is_alive_until_on_closed ["R-LOOP-6"],
            }
            errors {
                timer_new_with_null_callback_fails_without_callback ["R-ERR-1"],
                constructor_with_null_out_fails ["R-ERR-1"],
                poll_new_on_a_bad_fd_fails ["R-ERR-1"],
                io_submit_on_a_bad_fd_fails_with_and_without_inline ["R-IO-12", "R-ERR-1"],
                io_submit_with_a_short_struct_size_is_invalid ["R-IO-12"],
                io_submit_with_unknown_opcode_is_unsupported_and_unknown_flags_invalid ["R-IO-12"],
                io_submit_read_with_null_buffer_is_invalid ["R-IO-12"],
                io_submit_with_null_op_is_invalid ["R-IO-12"],
                cancel_with_a_non_negative_reason_or_nothing_pending_fails ["R-ERR-3"],
            }
            signal {
                raised_signal_calls_the_watcher_once ["R-SIG-1"],
                deliveries_before_run_once_coalesce_into_one_callback ["R-SIG-1"],
                two_watchers_of_one_signal_are_both_called ["R-SIG-2"],
                dispose_of_the_last_watcher_restores_the_previous_disposition ["R-SIG-3"],
                cancel_of_a_signal_watcher_delivers_the_reason_once ["R-EV-1"],
                close_of_a_signal_watcher_gives_only_on_closed ["R-EV-2"],
                hidden_signal_watcher_does_not_count_in_alive ["R-LOOP-7"],
                uncatchable_and_invalid_signals_are_refused ["R-SIG-4"],
                every_loop_watching_a_signal_is_told ["R-SIG-2"],
            }
            process {
                exit_code_is_reported_once_and_the_child_is_reaped ["R-PROC-1"],
                child_killed_by_a_signal_reports_code_minus_one_and_the_signal ["R-PROC-1"],
                child_that_exited_before_the_watch_is_reported ["R-PROC-1"],
                pid_that_is_not_a_child_fails_without_callback ["R-PROC-2"],
                cancel_of_a_process_watch_delivers_the_reason_once ["R-EV-1"],
                dispose_of_a_process_watch_never_calls_back ["R-EV-3"],
            }
            fs_watch {
                creating_then_writing_a_file_reports_rename_then_change ["R-FS-1"],
                watched_file_reports_its_changes_with_an_empty_name ["R-FS-1"],
                missing_path_fails_with_enoent ["R-FS-2"],
                two_watches_of_one_path_and_dispose_stops_reports ["R-EV-3", "R-FS-1"],
                cancel_of_a_fs_watch_delivers_the_reason_once ["R-EV-1"],
                deleting_the_watched_directory_ends_the_watch_with_enoent ["R-FS-3"],
            }
            dns {
                localhost_with_af_inet_resolves_to_127_0_0_1 ["R-DNS-1"],
                localhost_with_af_unspec_includes_127_0_0_1 ["R-DNS-1"],
                name_under_invalid_fails_with_dns_noname ["R-DNS-2"],
                cancel_of_a_pending_lookup_delivers_the_reason_once ["R-EV-1"],
                pending_lookup_counts_in_alive ["R-LOOP-6"],
                dispose_of_a_pending_lookup_then_destroy_succeeds ["R-DNS-4", "R-EV-3"],
                malformed_lookups_fail_without_callback ["R-DNS-3"],
            }
            dgram {
                udp_sendto_and_recvfrom_carry_data_and_the_sender_address ["R-IO-13"],
                recvfrom_truncates_a_long_datagram_and_keeps_message_boundaries ["R-IO-10", "R-IO-13"],
                peek_leaves_the_data_for_the_next_read ["R-IO-13"],
                unix_datagrams_carry_path_abstract_and_unnamed_senders ["R-IO-13"],
                sendto_without_address_needs_a_connection_and_a_closed_port_refuses ["R-IO-13"],
                cancel_of_a_pending_recvfrom_keeps_the_buffer_until_its_callback ["R-IO-14"],
                dispose_of_a_pending_recvfrom_never_calls_back ["R-EV-3", "R-IO-14"],
                peek_on_a_pipe_or_a_send_is_invalid ["R-IO-13", "R-ERR-2"],
            }
            file {
                openat_creates_opens_and_reports_errno ["R-IO-15"],
                statx_matches_std_metadata_and_follows_links_unless_nofollow ["R-IO-15"],
                fsync_and_datasync_flush_a_file ["R-IO-15"],
                mkdirat_renameat_unlinkat_change_the_tree ["R-IO-15"],
                ftruncate_sets_the_length ["R-IO-15"],
                cancel_and_dispose_of_file_requests ["R-IO-15"],
            }
            compat {
                a_1_0_sized_request_is_served_and_nothing_beyond_it_is_read ["R-COMPAT-1", "R-ERR-1"],
                instance_caps_never_exceed_caps ["R-COMPAT-2"],
                a_1_1_request_the_instance_lacks_is_unsupported ["R-COMPAT-3", "R-ERR-1"],
            }
        }
    };
}

/// Builds [`CASES`] from the case list.
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_table {
    ($($tier:ident { $($case:ident [$($rule:literal),* $(,)?]),* $(,)? })*) => {
        /// Every case of the kit, in tier order.
        pub const CASES: &[Case] = &[
            $($(
                Case {
                    tier: stringify!($tier),
                    name: stringify!($case),
                    rules: &[$($rule),*],
                    run: $tier::$case,
                },
            )*)*
        ];
    };
}

__conformance_case_list!(__conformance_table);

/// Expands to one `#[test]` per conformance case, each calling
/// `$loader` (an expression of type [`Reactor`]) to get the reactor under
/// test.
#[macro_export]
macro_rules! reactor_conformance_tests {
    ($loader:expr) => {
        fn __conformance_reactor() -> $crate::conformance::Reactor {
            $loader
        }
        $crate::__conformance_case_list!(__conformance_cases);
    };
}

/// The expansion behind [`reactor_conformance_tests!`].
#[doc(hidden)]
#[macro_export]
macro_rules! __conformance_cases {
    ($($tier:ident { $($case:ident [$($rule:literal),* $(,)?]),* $(,)? })*) => {
        $(
            mod $tier {
                $(
                    #[test]
                    fn $case() {
                        let reactor = super::__conformance_reactor();
                        $crate::conformance::run_versioned(
                            &[$($rule),*],
                            stringify!($case),
                            $crate::conformance::$tier::$case,
                            &reactor,
                        );
                    }
                )*
            }
        )*
    };
}
