use super::*;

#[test]
fn sizes_are_written_as_upstream_writes_them() {
    for (bytes, text) in [
        (0, "0 B"),
        (1, "1 B"),
        (999, "999 B"),
        (1000, "1 KB"),
        (1024, "1 KiB"),
        (1234, "1.234 KB"),
        (1500, "1.5 KB"),
        (1_048_576, "1 MiB"),
        (123_456_789, "123456.789 KB"),
        (10_000_000_000, "10 GB"),
        (1_000_001, "1000.001 KB"),
        (10_000_001, "10000.001 KB"),
        (1001, "1.001 KB"),
    ] {
        assert_eq!(byte_size(bytes), text, "{bytes}");
    }
}
