//! The reactor conformance kit: cases every reactor must pass, driven
//! through its `AaReactorVTable` alone (no Rust-only types), so the same
//! cases check `reactor-mio`, `reactor-uring` and a third party's reactor
//! written in any language.
//!
//! # Using it
//!
//! A test binary invokes [`reactor_conformance_tests!`](crate::reactor_conformance_tests) with an expression
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
                descriptor_names_a_reactor_of_this_abi [],
                unknown_interface_id_gives_null [],
                create_then_destroy_returns_ok [],
                destroy_with_a_live_event_returns_busy [],
                run_once_on_an_empty_loop_returns_zero [],
                options_of_other_plugins_are_ignored [],
                unknown_option_in_own_prefix_is_refused_with_its_name [],
                unprefixed_option_is_refused_with_how_to_write_it [],
                config_struct_size_too_small_is_invalid [],
                last_error_message_describes_the_last_failure [],
                now_ns_advances_with_the_loop [],
                every_failure_sets_last_error_message [],
            }
            timers {
                timers_fire_in_deadline_order [],
                equal_durations_fire_in_arming_order [],
                one_shot_fires_once_then_is_inactive [],
                periodic_fires_until_cancelled [],
                rearm_replaces_the_deadline_without_a_callback [],
                rearm_restarts_a_fired_one_shot [],
                cancel_reason_is_delivered_once_from_a_later_run_once [],
                cancel_inside_a_callback_is_delivered_by_a_later_iteration [],
                timer_armed_after_cpu_work_waits_its_full_duration [],
                blocking_run_once_returns_when_the_nearest_timer_is_due [],
                dispose_of_an_armed_timer_stops_it [],
                dispose_inside_its_own_callback_stops_a_periodic_timer [],
                close_of_an_armed_timer_gives_only_on_closed [],
                many_timers_fire_in_deadline_order [],
            }
            poll {
                pipe_read_end_reports_readable [],
                socketpair_reports_writable [],
                set_interest_reports_current_readiness_again [],
                interest_zero_disarms_the_poll [],
                cancel_of_a_poll_delivers_the_reason_once [],
                hang_up_is_reported [],
                poll_and_request_on_one_fd_both_see_data [],
                close_of_a_poll_owning_its_fd_closes_it [],
                close_of_an_armed_poll_gives_only_on_closed [],
                cancelled_poll_is_rearmed_by_set_interest [],
                readiness_is_not_reported_again_until_consumed [],
            }
            trigger {
                fire_from_another_thread_wakes_a_blocking_run_once [],
                fires_before_the_loop_runs_coalesce_into_one_callback [],
                fire_inside_the_callback_runs_it_again_in_a_later_iteration [],
                hidden_trigger_does_not_count_in_alive [],
                wake_from_another_thread_interrupts_run_once [],
                cancel_of_a_trigger_delivers_the_reason_once [],
                close_of_a_trigger_gives_on_closed_and_no_more_callbacks [],
            }
            io {
                write_then_read_inline_on_a_socketpair [],
                read_waits_for_data_then_completes_once [],
                request_without_inline_completes_from_run_once [],
                write_waits_for_room_then_completes [],
                accept_and_connect_over_loopback_fill_the_peer_address [],
                connect_to_a_closed_port_fails [],
                read_at_end_of_stream_returns_zero [],
                end_of_stream_behind_a_short_read_is_still_delivered [],
                write_to_a_closed_peer_fails_with_epipe_or_econnreset [],
                cancel_of_a_pending_read_completes_once_with_the_reason [],
                cancel_after_completion_is_invalid [],
                dispose_of_a_pending_read_never_calls_back [],
                close_of_a_pending_read_gives_ecanceled_then_on_closed [],
                io_close_completes_other_pending_requests_with_ecanceled [],
                reader_and_writer_on_one_fd_complete_independently [],
                pending_reads_on_one_fd_complete_in_fifo_order [],
                callback_may_submit_the_next_request_and_dispose_itself [],
                descriptor_reused_after_io_close_works [],
                requests_on_different_descriptors_start_in_submission_order [],
                disposed_pending_io_close_still_closes_its_descriptor_by_destroy [],
            }
            liveness {
                empty_loop_has_nothing_alive [],
                armed_timer_is_alive_until_it_fires [],
                set_ref_false_takes_an_event_out_of_alive [],
                hidden_timer_is_never_alive [],
                pending_request_is_alive_until_it_completes [],
                close_in_progress_is_alive_until_on_closed [],
            }
            errors {
                timer_new_with_null_callback_fails_without_callback [],
                constructor_with_null_out_fails [],
                poll_new_on_a_bad_fd_fails [],
                io_submit_on_a_bad_fd_fails_with_and_without_inline [],
                io_submit_with_a_short_struct_size_is_invalid [],
                io_submit_with_unknown_opcode_is_unsupported_and_unknown_flags_invalid [],
                io_submit_read_with_null_buffer_is_invalid [],
                io_submit_with_null_op_is_invalid [],
                cancel_with_a_non_negative_reason_or_nothing_pending_fails [],
            }
            signal {
                raised_signal_calls_the_watcher_once [],
                deliveries_before_run_once_coalesce_into_one_callback [],
                two_watchers_of_one_signal_are_both_called [],
                dispose_of_the_last_watcher_restores_the_previous_disposition [],
                cancel_of_a_signal_watcher_delivers_the_reason_once [],
                close_of_a_signal_watcher_gives_only_on_closed [],
                hidden_signal_watcher_does_not_count_in_alive [],
                uncatchable_and_invalid_signals_are_refused [],
                every_loop_watching_a_signal_is_told [],
            }
            process {
                exit_code_is_reported_once_and_the_child_is_reaped [],
                child_killed_by_a_signal_reports_code_minus_one_and_the_signal [],
                child_that_exited_before_the_watch_is_reported [],
                pid_that_is_not_a_child_fails_without_callback [],
                cancel_of_a_process_watch_delivers_the_reason_once [],
                dispose_of_a_process_watch_never_calls_back [],
            }
            fs_watch {
                creating_then_writing_a_file_reports_rename_then_change [],
                watched_file_reports_its_changes_with_an_empty_name [],
                missing_path_fails_with_enoent [],
                two_watches_of_one_path_and_dispose_stops_reports [],
                cancel_of_a_fs_watch_delivers_the_reason_once [],
                deleting_the_watched_directory_ends_the_watch_with_enoent [],
            }
            dns {
                localhost_with_af_inet_resolves_to_127_0_0_1 [],
                localhost_with_af_unspec_includes_127_0_0_1 [],
                name_under_invalid_fails_with_dns_noname [],
                cancel_of_a_pending_lookup_delivers_the_reason_once [],
                pending_lookup_counts_in_alive [],
                dispose_of_a_pending_lookup_then_destroy_succeeds [],
                malformed_lookups_fail_without_callback [],
            }
            dgram {
                udp_sendto_and_recvfrom_carry_data_and_the_sender_address [],
                recvfrom_truncates_a_long_datagram_and_keeps_message_boundaries [],
                peek_leaves_the_data_for_the_next_read [],
                unix_datagrams_carry_path_abstract_and_unnamed_senders [],
                sendto_without_address_needs_a_connection_and_a_closed_port_refuses [],
                cancel_of_a_pending_recvfrom_keeps_the_buffer_until_its_callback [],
                dispose_of_a_pending_recvfrom_never_calls_back [],
                peek_on_a_pipe_or_a_send_is_invalid [],
            }
            file {
                openat_creates_opens_and_reports_errno [],
                statx_matches_std_metadata_and_follows_links_unless_nofollow [],
                fsync_and_datasync_flush_a_file [],
                mkdirat_renameat_unlinkat_change_the_tree [],
                ftruncate_sets_the_length [],
                cancel_and_dispose_of_file_requests [],
            }
            compat {
                a_1_0_sized_request_is_served_and_nothing_beyond_it_is_read [],
                instance_caps_never_exceed_caps [],
                a_1_1_request_the_instance_lacks_is_unsupported [],
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
                        $crate::conformance::$tier::$case(&reactor);
                    }
                )*
            }
        )*
    };
}
