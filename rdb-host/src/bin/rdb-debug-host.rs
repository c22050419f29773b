//! The debug host process started by rdb: see the `rdb_host` crate docs.

fn main() {
    rdb_host::host_main()
}
