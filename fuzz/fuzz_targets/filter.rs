//! cargo-fuzz target `filter`: kk_engine::fuzzing::Target::Filter (see tests/fuzz.rs for the
//! seeded run of the same entry point).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(problem) = kk_engine::fuzzing::Target::Filter.run(data) {
        panic!("{}", problem);
    }
});
