//! `iggy-bench`: see the library crate (`rill_bench`) and `bench/README.md`.

fn main() {
    std::process::exit(rill_bench::main_with_args(std::env::args_os()));
}
