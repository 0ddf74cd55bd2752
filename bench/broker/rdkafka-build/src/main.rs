//! Prints the bundled librdkafka version. The binary exists only so that a release build of
//! this crate runs `rdkafka-sys`'s build script (which compiles `librdkafka.a`); `run.sh`
//! then links `rdkafka_performance` against that archive.

fn main() {
    // SAFETY: rd_kafka_version_str returns a pointer to a static NUL-terminated string.
    let version = unsafe { std::ffi::CStr::from_ptr(rdkafka_sys::rd_kafka_version_str()) };
    println!("librdkafka {}", version.to_string_lossy());
}
