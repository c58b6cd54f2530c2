//! Loading failures: missing files, non-libraries, foreign or incompatible
//! plugins (C fixtures compiled at test time), plugins not found by name.

use std::path::Path;

use tests::support::{c_fixture, run_child};

use crate::{scratch, PROBE};

fn fixture(name: &str) -> String {
    c_fixture(name, Path::new(env!("CARGO_TARGET_TMPDIR")))
        .display()
        .to_string()
}

#[test]
fn a_missing_plugin_file_is_not_found() {
    run_child(PROBE, &[], &[("ASYNC_REACTOR", "/nope/libx.so")])
        .assert_config_error("cannot load reactor \"/nope/libx.so\": file not found");
}

#[test]
fn a_file_that_is_not_a_shared_library_is_refused() {
    let path = scratch("notalib").join("libtext.so");
    std::fs::write(&path, "just some text, not an ELF file\n").unwrap();
    let p = path.display().to_string();
    run_child(PROBE, &[], &[("ASYNC_REACTOR", &p)]).assert_config_error(&format!(
        "cannot load reactor \"{p}\": not a shared library"
    ));
    if Path::new("/etc/hostname").is_file() {
        run_child(PROBE, &[], &[("ASYNC_REACTOR", "/etc/hostname")])
            .assert_config_error("cannot load reactor \"/etc/hostname\": not a shared library");
    }
}

#[test]
fn a_library_without_the_entry_symbol_is_not_a_plugin() {
    let p = fixture("no_entry");
    run_child(PROBE, &[], &[("ASYNC_REACTOR", &p)]).assert_config_error(&format!(
        "cannot load reactor \"{p}\": no aa_reactor_entry_v1 symbol (not a reactor plugin)"
    ));
    run_child(PROBE, &[], &[("ASYNC_SCHEDULER", &p)]).assert_config_error(&format!(
        "cannot load scheduler \"{p}\": no aa_scheduler_entry_v1 symbol (not a scheduler plugin)"
    ));
}

#[test]
fn a_plugin_of_another_abi_major_is_refused() {
    let p = fixture("abi_major2");
    run_child(PROBE, &[], &[("ASYNC_SCHEDULER", &p)]).assert_config_error(&format!(
        "cannot load scheduler \"{p}\": ABI major 2, host supports 1"
    ));
}

#[test]
fn a_descriptor_smaller_than_abi_1_0_is_refused() {
    let p = fixture("small_desc");
    let size = std::mem::size_of::<async_abi::AaPluginDesc>();
    run_child(PROBE, &[], &[("ASYNC_REACTOR", &p)]).assert_config_error(&format!(
        "cannot load reactor \"{p}\": descriptor is 8 bytes, ABI 1.0 needs at least {size}"
    ));
}

#[test]
fn a_plugin_of_the_wrong_role_is_refused() {
    let p = fixture("wrong_role");
    run_child(PROBE, &[], &[("ASYNC_REACTOR", &p)]).assert_config_error(&format!(
        "cannot load reactor \"{p}\": the plugin is a scheduler, not a reactor"
    ));
}
