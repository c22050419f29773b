//! rdb's end-to-end suite: one harness, one test case per program or scenario.
//!
//! - `programs::NAME`: each file of `tests/programs/` (a C, Rust, shell or Python program written
//!   for rdb's tests) is recorded and replayed as its `rdb-` directives say
//!   (`rdb_tests::cases` documents them).
//! - `corpus::NAME`: each file of `tests/corpus/` is an unmodified program of this machine with
//!   its current expectation: `identical`, `refused "why"`, or `fails "issue N: why"` for a known
//!   fault (reported, not hidden; flipping it to `identical` is a one-line change).
//! - `gdb::NAME`: each gdb script of `tests/gdb/` run by real gdb through `rdb gdb` over a
//!   recording of the program it names, against the session expected beside it.
//! - `crafted::NAME`: each script of `tests/crafted/` damages a copy of a good trace, and
//!   `rdb replay` must refuse it as the script's `# expect-` lines say (`crafted.rs`).
//! - `ui::NAME`: each malformed source of `tests/ui/` against the diagnostics in the `.stderr`
//!   file beside it (`RDB_BLESS=1` rewrites them).
//! - `MODULE::NAME`: scenarios that are more than one program and its output (changed binaries,
//!   killed recorders, kept files and packs, private traces, Ctrl-C, builds, replay debugging),
//!   one function each, in the modules below.
//!
//! rdb's binaries are built once per run (`rdb_tests::tools`, cargo's own up-to-date check) and
//! every command runs under `timeout`. Run one case with `cargo test -p rdb-tests --test e2e --
//! corpus::ls`, list them with `-- --list`.

mod binary_differs;
mod build_dlopen;
mod build_identity;
mod build_interrupt;
mod build_workspace;
mod callbacks;
mod clang_replay;
mod cli;
mod cpuid;
mod crafted;
mod find;
mod find_expr;
mod gdb_halts;
mod kept_files;
mod record_replay;
mod regions_in_generic_closure_async;
mod remote;
mod replay_debug;
mod sample_apps_replay;
mod threads;
mod trace_privacy;
mod ui;
mod ui_accepted;

use libtest_mimic::{Arguments, Completion, Failed, Trial};

/// Trials named `module::function` for scenario functions.
macro_rules! scenarios {
    ($module:ident: $($test:ident),+ $(,)?) => {
        vec![$(Trial::test(concat!(stringify!($module), "::", stringify!($test)), || {
            $module::$test();
            Ok(())
        })),+]
    };
}

/// Trials for scenarios that need what a machine may lack (rr needs performance counters):
/// each returns `Err(why)` when it cannot run here and is reported as ignored, with why.
macro_rules! scenarios_where_possible {
    ($module:ident: $($test:ident),+ $(,)?) => {
        vec![$(Trial::ignorable_test(concat!(stringify!($module), "::", stringify!($test)), || {
            match $module::$test() {
                Ok(()) => Ok(Completion::Completed),
                Err(why) => Ok(Completion::ignored_with(why)),
            }
        })),+]
    };
}

/// One trial per case file of `tests/<group>/`.
fn cases(group: &str) -> Vec<Trial> {
    rdb_tests::cases::discover(group)
        .into_iter()
        .enumerate()
        .map(|(i, case)| match case {
            Ok(case) => Trial::ignorable_test(case.name.clone(), move || match case.run() {
                Ok(rdb_tests::cases::Verdict::Passed) => Ok(Completion::Completed),
                Ok(rdb_tests::cases::Verdict::KnownFailurePassed) => {
                    eprintln!(
                        "{}: known failure did not show this time; make it `expect: identical` once it passes 10 runs in a row",
                        case.name
                    );
                    Ok(Completion::Completed)
                }
                Ok(rdb_tests::cases::Verdict::KnownFailure(why)) => {
                    let expected = match &case.expect {
                        rdb_tests::cases::Expect::Fails(issue, _) => issue.clone(),
                        _ => unreachable!("only `expect: fails` cases have known failures"),
                    };
                    let first = why.lines().next().unwrap_or("").to_string();
                    Ok(Completion::ignored_with(format!("known failure ({expected}): {first}")))
                }
                Err(why) => Err(Failed::from(format!("{}: {why}", case.path.display()))),
            }),
            // A malformed case file is a failing case of its own.
            Err(why) => Trial::test(format!("{group}::malformed-{i}"), move || Err(Failed::from(why))),
        })
        .collect()
}

/// One trial per gdb script of `tests/gdb/`.
fn gdb_scripts() -> Vec<Trial> {
    rdb_tests::gdb::discover()
        .into_iter()
        .enumerate()
        .map(|(i, script)| match script {
            Ok(script) => Trial::test(script.name.clone(), move || script.run().map_err(Failed::from)),
            Err(why) => Trial::test(format!("gdb::malformed-{i}"), move || Err(Failed::from(why))),
        })
        .collect()
}

fn main() {
    let args = Arguments::from_args();
    let mut trials = Vec::new();
    trials.extend(cases("programs"));
    trials.extend(gdb_scripts());
    trials.extend(cases("corpus"));
    trials.extend(crafted::trials());
    trials.extend(ui::trials());
    trials.extend(ui_accepted::trials());
    trials.extend(scenarios!(ui: cargo_rdb_build_reports_and_writes_nothing));
    trials.extend(scenarios!(build_dlopen: region_of_minibc_main_runs_from_dlopen, every_region_is_in_the_table));
    trials.extend(scenarios!(build_identity:
        minibc_dev,
        minibc_release,
        minibc_release_default_profile,
        jobq_dev,
        jobq_release,
        jobq_release_default_profile,
        race_release_default_profile,
        race_dev,
        rebuild_without_change_is_identical,
        user_rustflags_are_kept,
    ));
    trials.extend(scenarios!(build_interrupt: killed_build_leaves_the_tree_unchanged));
    trials.extend(scenarios!(build_workspace: workspace_with_path_dependency, missing_debug_info_is_explained));
    trials.extend(scenarios!(callbacks:
        callbacks_see_calls_returns_writes_and_accesses_in_program_order,
        a_callback_with_the_wrong_signature_is_rejected_rustc_style,
        c_on_write_names_the_line_that_corrupts_a_balance,
        c_on_call_malloc_counts_the_allocations_the_program_reports,
        watches_beyond_the_debug_registers_use_page_protection,
        page_protection_keeps_the_programs_own_protection_and_faults,
        page_protection_lets_the_kernel_write_on_a_watched_stack_page,
        a_misbehaving_callback_is_reported_and_never_changes_the_replay,
        callbacks_of_every_thread_run_in_the_recorded_order,
        going_back_with_callbacks_under_gdb_is_refused_and_forwards_still_runs_them,
        symbol_and_memory_callbacks_follow_threads_and_forked_processes,
        c_read_and_return_callbacks_and_a_backtrace,
        rust_read_callbacks_see_every_access_with_a_backtrace,
        c_watch_from_a_callback_reaches_new_heap_memory,
        c_call_callback_of_an_inlined_function_is_reported_at_build_time,
        call_callbacks_of_a_trait_impls_method_and_a_generic_functions_return,
        syscall_callbacks_see_the_calls_that_create_threads_before_and_after,
    ));
    trials.extend(scenarios!(clang_replay:
        every_inlined_and_unrolled_copy_runs_the_region,
        a_region_whose_statement_leaves_an_unrolled_loop_is_reported_not_run_once,
        regions_on_a_path_leaving_a_loop_run_once_per_pass,
        a_region_ending_a_block_never_runs_on_the_paths_that_skip_it,
        a_region_before_a_call_inlined_into_a_loop_runs_at_every_iteration,
        a_region_before_a_step_without_code_never_prints_the_sum_before_the_add,
        a_region_ending_an_unrolled_loop_body_never_runs_with_another_iterations_values,
        a_path_the_optimizer_threads_past_the_anchor_runs_the_region,
        entry_values_give_the_o0_values_at_o2,
        a_region_calls_a_helper_the_optimizer_inlined_everywhere,
        a_global_the_optimizer_keeps_in_a_register_is_never_read_stale,
        list_region_shows_the_lost_tail_on_replay,
        minibc_regions_explain_the_recorded_crash,
        lua_region_in_the_hot_loop_runs_on_replay,
    ));
    trials.extend(scenarios!(record_replay:
        replay_works_from_another_place_and_environment,
        corrupt_and_foreign_traces_are_refused,
        changed_binary_is_refused_by_name,
        killed_recorder_leaves_a_trace_that_replays_to_its_end,
        killed_recorder_of_a_forking_script_replays_to_its_end,
        gdb_on_a_trace_cut_short_says_so_and_exits_4,
        info_describes_a_trace,
        default_trace_dir_and_latest_link,
        recorded_stdin_is_not_needed_for_replay,
        scripts_and_relative_execs_replay_from_elsewhere,
        changed_shared_library_is_refused_by_name,
        git_commit_replays_after_the_repository_changed,
        ctrl_c_reaches_the_program_and_the_trace_completes,
        closed_standard_descriptors_stay_closed,
        a_trace_root_that_is_a_file_is_said_to_be_one,
        output_sent_to_a_socket_is_re_emitted,
    ));
    trials.extend(scenarios!(find:
        c_list_losing_nodes,
        counting_stubs_number_hits_as_breakpoints_do,
        counting_stubs_count_the_copies_of_a_generic_region,
        jobq_losing_a_job,
        minibc_stack_depth,
        race_lost_update,
        ctrl_c_prints_the_interval_and_the_resumed_search_finds_the_same,
        a_search_on_a_trace_cut_short_says_so_and_exits_4,
    ));
    trials.extend(scenarios!(find_expr:
        rust_static_changes_are_the_ones_the_write_callback_sees,
        c_global_overrun_and_kernel_write,
        racy_counter_changes_in_every_thread,
        c_places_follow_their_pointers,
        rust_places_follow_vec_box_and_pointers,
        expr_first_condition_is_the_linear_listings_first,
        watched_values_find_the_statement_expr_finds,
        watched_values_in_threads_find_the_store_expr_finds,
    ));
    trials.extend(scenarios!(gdb_halts:
        watchpoints_and_caught_syscalls_of_threads_are_each_delivered_once,
        going_back_over_halts_of_several_threads_gives_the_same_stops_again,
    ));
    trials.extend(scenarios!(replay_debug:
        minibc_regions_show_branch_popping_an_empty_stack,
        minibc_release_regions_read_the_vm_counter_the_dwarf_loses_at_the_loop_join,
        a_trace_from_another_binary_is_refused,
        misbehaving_debug_code_is_reported_and_never_changes_the_replay,
        a_region_in_threads_finds_every_lost_update,
        a_region_ending_a_loop_body_runs_at_the_end_of_each_iteration,
    ));
    trials.extend(scenarios!(regions_in_generic_closure_async:
        regions_in_generics_closures_and_async_replay_in_a_dev_build,
        regions_in_generics_closures_and_async_replay_in_a_release_build,
        an_async_variable_not_kept_across_an_await_is_reported_never_read_stale,
        a_fresh_program_replays_its_regions_in_a_dev_build,
        a_fresh_program_replays_its_regions_in_a_release_build,
        a_fresh_program_runs_each_region_as_its_code_run_in_place_would,
        debug_only_locals_are_shared_per_call_across_recursion_and_threads,
        a_parameter_optimized_out_in_release_reads_its_value_on_entry,
        a_program_recorded_with_rdb_macros_declared_replays_its_regions,
        a_path_the_optimizer_threads_past_the_anchor_runs_the_region_in_release,
        async_locals_kept_across_an_await_are_read_in_the_state_in_release,
        a_scheduler_written_fresh_runs_its_regions_as_in_place_code_would,
        regions_before_a_loops_exit_run_there_or_are_reported,
        a_region_before_a_for_loop_runs_once_before_it_in_release,
        a_calculator_written_fresh_runs_its_regions_as_in_place_code_would,
    ));
    trials.extend(scenarios!(remote:
        minibc_regions_under_gdbserver_and_qemu_print_what_the_replay_prints,
        c_minibc_regions_under_gdbserver_print_what_the_replay_prints,
        regions_stop_each_thread_in_turn_under_gdbserver_and_qemu,
        race_region_runs_in_its_threads_under_gdbserver,
        a_stub_killed_mid_run_is_reported_within_seconds,
        a_binary_that_is_not_the_running_one_is_refused,
        regions_run_on_rdbs_own_gdb_server,
    ));
    trials.extend(scenarios_where_possible!(remote: regions_run_on_an_rr_replay));
    trials.extend(scenarios_where_possible!(cpuid: cpuid_is_trapped_where_the_host_offers_it));
    trials.extend(scenarios!(sample_apps_replay: sample_apps_replay_exactly, rayon_and_crossbeam_replay_exactly));
    trials.extend(scenarios!(threads:
        racy_recordings_replay_to_their_own_outcome,
        the_chaos_seed_is_stored_in_the_trace,
        writes_blocked_on_a_slow_reader_replay_in_the_kernels_order,
        a_write_to_stdout_does_not_wait_for_one_to_stderr,
        interruption_points_replay_with_and_without_stubs,
    ));
    trials.extend(scenarios!(binary_differs:
        a_use_only_debug_code_needs_is_named_with_its_line_and_the_fix,
        a_profile_changed_after_recording_says_to_record_again,
        another_directory_and_other_locked_versions_are_named,
        the_first_differing_function_of_a_c_program_is_named,
        cargo_rdb_replay_of_a_missing_trace_fails_before_building,
    ));
    trials.extend(scenarios!(cli:
        versions_and_help_say_what_each_tool_is,
        cargo_rdb_build_shows_progress_on_a_terminal_only,
        the_demo_reaches_its_punchline_in_under_30_lines,
    ));
    trials.extend(scenarios!(kept_files:
        rebuilt_or_deleted_program_and_library_still_replay_from_the_trace,
        packed_trace_replays_after_the_trace_and_the_originals_are_gone,
        damaged_pack_is_refused,
        traces_of_one_program_in_the_trace_root_share_its_kept_files,
        a_changed_file_is_named_without_revealing_its_current_hash,
    ));
    trials.extend(scenarios!(trace_privacy:
        traces_are_private_to_their_owner,
        output_directory_of_another_user_is_refused,
        output_directory_writable_by_others_is_refused,
        planted_symlinks_are_never_followed,
        unwritable_trace_root_fails_at_once_with_a_message,
    ));
    let conclusion = libtest_mimic::run(&args, trials);
    crafted::cleanup();
    conclusion.exit();
}
