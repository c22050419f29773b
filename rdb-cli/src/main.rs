fn main() {
    eprintln!("rdb: not built yet");
    std::process::exit(2);
}
