//! cargo-fuzz target `yaml`: kk_engine::fuzzing::Target::Yaml (see tests/fuzz.rs for the
//! seeded run of the same entry point).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(problem) = kk_engine::fuzzing::Target::Yaml.run(data) {
        panic!("{}", problem);
    }
});
