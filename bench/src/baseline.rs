//! The machine's physical ceilings, measured the way the server would hit them:
//!
//! * **disk**: sequential O_DIRECT writes of `block_size` chunks to a new file in the server's
//!   data directory (then `fdatasync`) and reads of it back, one block at a time; then reads and
//!   overwrites of it with 1, 4 and 16 requests in flight (one thread each, interleaved
//!   blocks); then the latency of single 4 KiB writes, the floor of a `written` acknowledgement.
//!   O_DIRECT skips the page cache, as the server's segment I/O does; buffers, offsets and
//!   lengths are 4096-aligned, and buffers sit in 2 MiB huge pages as the server's large ones.
//! * **loopback TCP**: this binary spawns itself (`iggy-bench loopback-sink`) as a second process
//!   that connects back to a listener here; 1 MiB writes stream `loopback_size` bytes per
//!   connection and the sink acknowledges the byte count after EOF. Measured with one connection
//!   and with two (the machine has two cores); the ceiling is the faster of the two.
//!
//! Reports divide their throughput by these figures (see `report.rs`).

use crate::error::{Error, Result};
use crate::units::{BYTES_PER_MEGABYTE, iso8601_utc};
use serde::{Deserialize, Serialize};
use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Instant, SystemTime};

/// Alignment of O_DIRECT buffers, offsets and lengths (512 suffices here; 4096 is safe anywhere).
const DIRECT_IO_ALIGNMENT: usize = 4096;
/// Size of each loopback write and read.
const LOOPBACK_CHUNK_BYTES: usize = 1 << 20;
/// Name of the scratch file in the measured directory (removed afterwards).
const SCRATCH_FILE: &str = ".iggy-bench-baseline.tmp";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiskBaseline {
    pub dir: PathBuf,
    pub bytes: u64,
    pub block_size: u64,
    pub write_mb_s: f64,
    /// One reader, one block at a time (queue depth 1).
    pub read_mb_s: f64,
    /// Two readers at once over interleaved blocks (queue depth 2), summed. Older baselines;
    /// newer ones measure [`DiskBaseline::depths`].
    #[serde(default)]
    pub read_parallel_mb_s: Option<f64>,
    /// Reads and overwrites of the same file with 1, 4 and 16 requests in flight.
    #[serde(default)]
    pub depths: Vec<DepthFigures>,
    /// One 4 KiB O_DIRECT write at a time into allocated space: the floor of a durable
    /// (`written`) acknowledgement of a small batch.
    #[serde(default)]
    pub write_4k_latency_us: Option<LatencyFigures>,
}

/// Sequential O_DIRECT throughput with `depth` requests in flight (one thread each).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DepthFigures {
    pub depth: u32,
    pub read_mb_s: f64,
    pub write_mb_s: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencyFigures {
    pub p50: f64,
    pub p99: f64,
}

/// The queue depths `baseline` measures.
pub const QUEUE_DEPTHS: [u32; 3] = [1, 4, 16];
/// How many 4 KiB writes the latency figure is taken over.
const LATENCY_SAMPLES: usize = 2000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoopbackBaseline {
    pub bytes_per_connection: u64,
    /// One connection.
    pub single_mb_s: f64,
    /// Two connections at once, summed.
    pub dual_mb_s: f64,
}

impl LoopbackBaseline {
    pub fn ceiling_mb_s(&self) -> f64 {
        self.single_mb_s.max(self.dual_mb_s)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    pub measured_at: String,
    pub hostname: String,
    pub disk: Option<DiskBaseline>,
    pub loopback: Option<LoopbackBaseline>,
}

impl Baseline {
    pub fn load(path: &Path) -> Result<Baseline> {
        let text = std::fs::read_to_string(path).map_err(|error| {
            Error::Usage(format!("cannot read baseline {}: {error}", path.display()))
        })?;
        serde_json::from_str(&text).map_err(|error| {
            Error::Usage(format!(
                "{} is not a baseline JSON: {error}",
                path.display()
            ))
        })
    }

    pub fn save(&self, path: &Path) -> Result<()> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        let json = serde_json::to_string_pretty(self).expect("baseline serialises");
        std::fs::write(path, json)?;
        Ok(())
    }

    pub fn disk_write_mb_s(&self) -> Option<f64> {
        self.disk.as_ref().map(|disk| disk.write_mb_s)
    }

    /// The best O_DIRECT read figure at any queue depth measured.
    pub fn disk_read_mb_s(&self) -> Option<f64> {
        self.disk.as_ref().map(|disk| {
            disk.depths.iter().map(|figures| figures.read_mb_s).fold(
                disk.read_mb_s.max(disk.read_parallel_mb_s.unwrap_or(0.0)),
                f64::max,
            )
        })
    }

    pub fn loopback_mb_s(&self) -> Option<f64> {
        self.loopback.as_ref().map(LoopbackBaseline::ceiling_mb_s)
    }

    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if let Some(disk) = &self.disk {
            let mut text = format!(
                "O_DIRECT write {:.0} MB/s, read {:.0} MB/s",
                disk.write_mb_s, disk.read_mb_s
            );
            if let Some(parallel) = disk.read_parallel_mb_s {
                text += &format!(" (2 readers {parallel:.0})");
            }
            for figures in &disk.depths {
                text += &format!(
                    ", QD{} read {:.0} / write {:.0} MB/s",
                    figures.depth, figures.read_mb_s, figures.write_mb_s
                );
            }
            if let Some(latency) = disk.write_4k_latency_us {
                text += &format!(
                    ", 4 KiB write p50 {:.0} us p99 {:.0} us",
                    latency.p50, latency.p99
                );
            }
            parts.push(format!("{text} ({})", disk.dir.display()));
        }
        if let Some(loopback) = &self.loopback {
            parts.push(format!(
                "loopback TCP {:.0} MB/s (1 connection {:.0}, 2 connections {:.0})",
                loopback.ceiling_mb_s(),
                loopback.single_mb_s,
                loopback.dual_mb_s
            ));
        }
        parts.join("; ")
    }
}

/// What to measure.
#[derive(Debug, Clone)]
pub struct BaselineOptions {
    pub dir: Option<PathBuf>,
    pub disk_bytes: u64,
    pub block_size: u64,
    pub loopback_bytes: u64,
    /// The program to spawn as the loopback sink (normally this executable).
    pub sink_program: PathBuf,
}

/// The server's data directory by default: `$IGGY_SYSTEM_PATH`, else `./local_data`.
pub fn default_data_dir() -> PathBuf {
    std::env::var_os("IGGY_SYSTEM_PATH")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("local_data"))
}

pub fn measure(options: &BaselineOptions, disk: bool, loopback: bool) -> Result<Baseline> {
    let dir = options.dir.clone().unwrap_or_else(default_data_dir);
    Ok(Baseline {
        measured_at: iso8601_utc(SystemTime::now()),
        hostname: hostname(),
        disk: if disk {
            Some(measure_disk(&dir, options.disk_bytes, options.block_size)?)
        } else {
            None
        },
        loopback: if loopback {
            let single = measure_loopback(&options.sink_program, options.loopback_bytes, 1)?;
            let dual = measure_loopback(&options.sink_program, options.loopback_bytes, 2)?;
            Some(LoopbackBaseline {
                bytes_per_connection: options.loopback_bytes,
                single_mb_s: single,
                dual_mb_s: dual,
            })
        } else {
            None
        },
    })
}

pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// A zeroed O_DIRECT buffer in 2 MiB transparent huge pages, as the server's large buffers
/// are (`storage/huge_pages.rs`): a transfer inside one huge page is one segment for the
/// device, while in 4 KiB pages a 1 MiB one is ~256 and a virtio disk splits it. The ceiling
/// is what the device does, so it is measured the way the server can reach it.
struct AlignedBuffer {
    pointer: *mut u8,
    len: usize,
    mapping: *mut libc::c_void,
    mapped: usize,
}

const HUGE_PAGE_BYTES: usize = 2 << 20;

impl AlignedBuffer {
    fn new(size: usize) -> AlignedBuffer {
        assert!(size > 0 && size.is_multiple_of(DIRECT_IO_ALIGNMENT));
        let mapped = size.next_multiple_of(HUGE_PAGE_BYTES) + HUGE_PAGE_BYTES;
        // SAFETY: a fresh private anonymous mapping (zeroed by the kernel).
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                mapped,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert!(
            raw != libc::MAP_FAILED,
            "out of memory for a {size}-byte buffer"
        );
        let start = (raw as usize).next_multiple_of(HUGE_PAGE_BYTES);
        // SAFETY: inside the mapping; a refusal only leaves ordinary pages.
        unsafe {
            libc::madvise(
                start as *mut libc::c_void,
                mapped - (start - raw as usize),
                libc::MADV_HUGEPAGE,
            )
        };
        let mut buffer = AlignedBuffer {
            pointer: start as *mut u8,
            len: size,
            mapping: raw,
            mapped,
        };
        // Fault the pages in now, not during the first measured transfer.
        buffer.as_mut_slice().fill(0);
        buffer
    }

    fn as_slice(&self) -> &[u8] {
        // SAFETY: `len` bytes of the mapping from `pointer` (it spans `len` past the aligned
        // start), initialised (zeroed) and owned by self.
        unsafe { std::slice::from_raw_parts(self.pointer, self.len) }
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` makes the borrow unique.
        unsafe { std::slice::from_raw_parts_mut(self.pointer, self.len) }
    }
}

impl Drop for AlignedBuffer {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`; nothing borrows it any more.
        unsafe { libc::munmap(self.mapping, self.mapped) };
    }
}

/// Writes then reads `bytes` with O_DIRECT in `block_size` chunks; returns MB/s both ways.
pub fn measure_disk(dir: &Path, bytes: u64, block_size: u64) -> Result<DiskBaseline> {
    let block = block_size as usize;
    if block == 0 || !block.is_multiple_of(DIRECT_IO_ALIGNMENT) {
        return Err(Error::Usage(format!(
            "--block-size must be a positive multiple of {DIRECT_IO_ALIGNMENT}"
        )));
    }
    let blocks = bytes.div_ceil(block_size).max(1);
    let total = blocks * block_size;
    std::fs::create_dir_all(dir)
        .map_err(|error| Error::Usage(format!("cannot create {}: {error}", dir.display())))?;
    let path = dir.join(SCRATCH_FILE);
    let result = (|| {
        let mut buffer = AlignedBuffer::new(block);
        for (i, byte) in buffer.as_mut_slice().iter_mut().enumerate() {
            *byte = (i % 251) as u8;
        }
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(libc::O_DIRECT)
            .open(&path)
            .map_err(|error| direct_io_error(dir, error))?;
        let started = Instant::now();
        for index in 0..blocks {
            file.write_all_at(buffer.as_slice(), index * block_size)
                .map_err(|error| direct_io_error(dir, error))?;
        }
        file.sync_data()?;
        let write_seconds = started.elapsed().as_secs_f64();
        drop(file);

        let file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(&path)
            .map_err(|error| direct_io_error(dir, error))?;
        let started = Instant::now();
        for index in 0..blocks {
            file.read_exact_at(buffer.as_mut_slice(), index * block_size)
                .map_err(|error| direct_io_error(dir, error))?;
        }
        let read_seconds = started.elapsed().as_secs_f64();
        assert_eq!(
            buffer.as_slice()[1],
            1,
            "O_DIRECT read returned other bytes"
        );

        drop(file);

        // The same file read and overwritten (allocated space, as the server's preallocated
        // segments) by `depth` threads at once over interleaved blocks.
        let file = std::sync::Arc::new(
            OpenOptions::new()
                .read(true)
                .write(true)
                .custom_flags(libc::O_DIRECT)
                .open(&path)
                .map_err(|error| direct_io_error(dir, error))?,
        );
        let mut depths = Vec::new();
        for depth in QUEUE_DEPTHS {
            // Depth 1 is the sequential read just measured (and checked): not read again.
            let read_seconds = if depth == 1 {
                read_seconds
            } else {
                run_at_depth(&file, blocks, block_size, depth, false)?
            };
            let write_seconds = run_at_depth(&file, blocks, block_size, depth, true)?;
            file.sync_data()?;
            depths.push(DepthFigures {
                depth,
                read_mb_s: total as f64 / BYTES_PER_MEGABYTE / read_seconds,
                write_mb_s: total as f64 / BYTES_PER_MEGABYTE / write_seconds,
            });
        }
        let write_4k_latency_us = Some(small_write_latency(&file, total)?);
        Ok(DiskBaseline {
            dir: dir.to_path_buf(),
            bytes: total,
            block_size,
            write_mb_s: total as f64 / BYTES_PER_MEGABYTE / write_seconds,
            read_mb_s: total as f64 / BYTES_PER_MEGABYTE / read_seconds,
            read_parallel_mb_s: None,
            depths,
            write_4k_latency_us,
        })
    })();
    let _ = std::fs::remove_file(&path);
    result
}

/// Reads (or overwrites) the file's `blocks` with `depth` threads, thread `t` taking blocks
/// `t, t + depth, ...`, so `depth` requests are in flight. Returns the seconds taken.
fn run_at_depth(
    file: &std::sync::Arc<std::fs::File>,
    blocks: u64,
    block_size: u64,
    depth: u32,
    write: bool,
) -> Result<f64> {
    let started = Instant::now();
    let workers: Vec<_> = (0..u64::from(depth))
        .map(|worker| {
            let file = file.clone();
            std::thread::spawn(move || -> std::io::Result<()> {
                let mut buffer = AlignedBuffer::new(block_size as usize);
                let mut index = worker;
                while index < blocks {
                    if write {
                        file.write_all_at(buffer.as_slice(), index * block_size)?;
                    } else {
                        file.read_exact_at(buffer.as_mut_slice(), index * block_size)?;
                    }
                    index += u64::from(depth);
                }
                Ok(())
            })
        })
        .collect();
    for worker in workers {
        worker
            .join()
            .map_err(|_| Error::Protocol("disk worker panicked".into()))??;
    }
    Ok(started.elapsed().as_secs_f64())
}

/// p50 and p99 of single 4 KiB O_DIRECT writes, one after another along the file.
fn small_write_latency(file: &std::fs::File, file_bytes: u64) -> Result<LatencyFigures> {
    let buffer = AlignedBuffer::new(DIRECT_IO_ALIGNMENT);
    let slots = (file_bytes / DIRECT_IO_ALIGNMENT as u64).max(1);
    let mut samples = Vec::with_capacity(LATENCY_SAMPLES);
    for sample in 0..LATENCY_SAMPLES as u64 {
        let started = Instant::now();
        file.write_all_at(
            buffer.as_slice(),
            (sample % slots) * DIRECT_IO_ALIGNMENT as u64,
        )?;
        samples.push(started.elapsed().as_secs_f64() * 1e6);
    }
    samples.sort_by(f64::total_cmp);
    let at = |quantile: f64| samples[((samples.len() - 1) as f64 * quantile) as usize];
    Ok(LatencyFigures {
        p50: at(0.50),
        p99: at(0.99),
    })
}

fn direct_io_error(dir: &Path, error: std::io::Error) -> Error {
    if error.raw_os_error() == Some(libc::EINVAL) {
        Error::Unsupported(format!(
            "O_DIRECT is not supported in {} (tmpfs?): measure a directory on the server's real disk with --dir",
            dir.display()
        ))
    } else {
        Error::Io(error)
    }
}

/// Streams `bytes` over each of `connections` loopback connections to a child process; returns
/// the summed MB/s from the first byte to the last acknowledgement.
pub fn measure_loopback(sink_program: &Path, bytes: u64, connections: usize) -> Result<f64> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let address = listener.local_addr()?;
    let mut child = Command::new(sink_program)
        .args([
            "loopback-sink",
            "--connect",
            &address.to_string(),
            "--connections",
            &connections.to_string(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|error| {
            Error::Usage(format!(
                "cannot spawn {} loopback-sink: {error}",
                sink_program.display()
            ))
        })?;
    let result = (|| {
        let streams: Vec<TcpStream> = (0..connections)
            .map(|_| {
                let (stream, _) = listener.accept()?;
                stream.set_nodelay(true)?;
                Ok(stream)
            })
            .collect::<std::io::Result<_>>()?;
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(connections + 1));
        let senders: Vec<_> = streams
            .into_iter()
            .map(|mut stream| {
                let barrier = barrier.clone();
                std::thread::spawn(move || -> std::io::Result<u64> {
                    let chunk = vec![0x5au8; LOOPBACK_CHUNK_BYTES];
                    barrier.wait();
                    let mut left = bytes;
                    while left > 0 {
                        let size = left.min(chunk.len() as u64) as usize;
                        stream.write_all(&chunk[..size])?;
                        left -= size as u64;
                    }
                    stream.shutdown(Shutdown::Write)?;
                    let mut ack = [0u8; 8];
                    stream.read_exact(&mut ack)?;
                    Ok(u64::from_le_bytes(ack))
                })
            })
            .collect();
        barrier.wait();
        let started = Instant::now();
        let mut received = 0;
        for sender in senders {
            received += sender
                .join()
                .map_err(|_| Error::Protocol("loopback sender panicked".into()))??;
        }
        let seconds = started.elapsed().as_secs_f64();
        if received != bytes * connections as u64 {
            return Err(Error::Protocol(format!(
                "loopback sink received {received} bytes of {}",
                bytes * connections as u64
            )));
        }
        Ok(received as f64 / BYTES_PER_MEGABYTE / seconds)
    })();
    drop(listener);
    match result {
        Ok(rate) => {
            child.wait()?;
            Ok(rate)
        }
        Err(error) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(error)
        }
    }
}

/// The child side: open `connections` connections to the parent, read each to EOF and answer
/// with its byte count.
pub fn loopback_sink(address: &str, connections: usize) -> Result<()> {
    let threads: Vec<_> = (0..connections)
        .map(|_| {
            let mut stream = TcpStream::connect(address)?;
            Ok(std::thread::spawn(move || -> std::io::Result<()> {
                let mut buffer = vec![0u8; LOOPBACK_CHUNK_BYTES];
                let mut total = 0u64;
                loop {
                    let read = stream.read(&mut buffer)?;
                    if read == 0 {
                        break;
                    }
                    total += read as u64;
                }
                stream.write_all(&total.to_le_bytes())
            }))
        })
        .collect::<std::io::Result<_>>()?;
    for thread in threads {
        thread
            .join()
            .map_err(|_| Error::Protocol("loopback sink thread panicked".into()))??;
    }
    Ok(())
}
