//! cargo-fuzz target `pattern`: kk_engine::fuzzing::Target::Pattern (see tests/fuzz.rs for the
//! seeded run of the same entry point).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(problem) = kk_engine::fuzzing::Target::Pattern.run(data) {
        panic!("{}", problem);
    }
});
