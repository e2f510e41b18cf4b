//! Which I/O driver the shards' runtimes run on (`system.io_driver`).
//!
//! io_uring is the fast path, but Docker's default seccomp profile (Engine 25+), Kubernetes'
//! `RuntimeDefault`, GitHub's runners and `kernel.io_uring_disabled` refuse it. compio built with
//! both its `io-uring` and `polling` features has a fusion driver that runs either: `auto` probes
//! io_uring once at start (on the main thread, before any shard) and uses it where it can be set
//! up, else the readiness driver (epoll) with one WARN line saying why, what it costs and how to
//! get io_uring back. On the readiness driver compio runs file operations on its blocking pool,
//! off the shard's event loop; segment files stay O_DIRECT from the same aligned buffers, and the
//! ack modes and recovery are unchanged.

use serde::Deserialize;
use std::fmt;

/// `system.io_driver`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IoDriverSetting {
    /// io_uring where the kernel allows it, otherwise the readiness driver.
    Auto,
    /// io_uring or refuse to start.
    IoUring,
    /// The readiness driver (epoll) even where io_uring works.
    Polling,
}

/// The driver a runtime runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoDriver {
    IoUring,
    Polling,
}

impl IoDriver {
    pub fn name(self) -> &'static str {
        match self {
            IoDriver::IoUring => "io_uring",
            IoDriver::Polling => "polling",
        }
    }
}

impl fmt::Display for IoDriver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// How every shard builds its runtime, decided once at start.
#[derive(Debug, Clone)]
pub struct Plan {
    pub driver: IoDriver,
    /// Why `auto` fell back to the readiness driver (for the WARN line).
    pub fallback: Option<String>,
}

const HOW_TO_GET_IO_URING_BACK: &str = "The readiness driver runs file I/O on a thread pool: \
     expect lower throughput and higher latency than with io_uring. To use io_uring in a container, \
     run it with the seccomp profile in docker/seccomp-io-uring.json (docker run --security-opt \
     seccomp=docker/seccomp-io-uring.json, or the compose file's security_opt); on a host, set the \
     sysctl kernel.io_uring_disabled=0";

/// Decides the driver for `setting`: probes io_uring unless the readiness driver is asked for.
/// Fails only when `io_uring` is required and cannot be set up.
pub fn plan(setting: IoDriverSetting) -> Result<Plan, String> {
    match setting {
        IoDriverSetting::Polling => Ok(Plan {
            driver: IoDriver::Polling,
            fallback: None,
        }),
        IoDriverSetting::IoUring => match probe_io_uring() {
            Ok(()) => Ok(Plan {
                driver: IoDriver::IoUring,
                fallback: None,
            }),
            Err(reason) => Err(format!(
                "cannot start an io_uring runtime: {reason}. system.io_driver is \"io_uring\", which requires it; \
                 set it to \"auto\" (the default) to start on the readiness driver instead, or run with the \
                 seccomp profile in docker/seccomp-io-uring.json (Docker's default profile blocks io_uring)"
            )),
        },
        IoDriverSetting::Auto => match probe_io_uring() {
            Ok(()) => Ok(Plan {
                driver: IoDriver::IoUring,
                fallback: None,
            }),
            Err(reason) => Ok(Plan {
                driver: IoDriver::Polling,
                fallback: Some(format!(
                    "io_uring is not available ({reason}); serving on the readiness driver (epoll). {HOW_TO_GET_IO_URING_BACK}"
                )),
            }),
        },
    }
}

/// Sets up (and drops) a small io_uring; the error says why the kernel refused.
fn probe_io_uring() -> Result<(), String> {
    match io_uring::IoUring::new(8) {
        Ok(_) => Ok(()),
        Err(error) => Err(explain(&error)),
    }
}

#[allow(
    clippy::disallowed_methods,
    reason = "boot and runtime construction, before any shard serves"
)]
fn explain(error: &std::io::Error) -> String {
    let disabled = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .ok()
        .map(|value| value.trim().to_string())
        .filter(|value| value != "0");
    match (error.raw_os_error(), disabled) {
        (Some(libc::EPERM), Some(value)) => {
            format!("{error}: the sysctl kernel.io_uring_disabled is {value}")
        }
        (Some(libc::EPERM), None) => format!(
            "{error}: a seccomp profile blocks it (Docker's default since Engine 25, Kubernetes' RuntimeDefault)"
        ),
        (Some(libc::ENOSYS), _) => format!(
            "{error}: the kernel has no io_uring (before Linux 5.1), or a seccomp profile hides it"
        ),
        (Some(libc::ENOMEM), _) => {
            format!(
                "{error}: RLIMIT_MEMLOCK is too low for the ring (raise it, e.g. --ulimit memlock=-1)"
            )
        }
        _ => error.to_string(),
    }
}

/// Builds a shard's runtime on the planned driver. `auto` that found io_uring lets compio use it
/// only if the kernel's io_uring has every operation compio needs (it falls back otherwise);
/// the caller reads back which driver the runtime got.
///
/// An io_uring ring is cooperative (`IORING_SETUP_COOP_TASKRUN` with `TASKRUN_FLAG`): a
/// completion from another core while the shard runs (a socket's data, the disk's interrupt)
/// is picked up at the shard's next entry into the kernel, which its event loop makes after
/// every batch of tasks, instead of interrupting it with an inter-processor interrupt, which
/// on a VM is an exit to the hypervisor. Kernels before 5.19 refuse the flags; the ring is then
/// set up without them.
pub fn build_runtime(plan: &Plan) -> Result<compio::runtime::Runtime, String> {
    let build = |cooperative: bool| {
        let mut proactor = compio::driver::ProactorBuilder::new();
        proactor.capacity(4096);
        proactor.driver_type(match plan.driver {
            IoDriver::IoUring => compio::driver::DriverType::IoUring,
            IoDriver::Polling => compio::driver::DriverType::Poll,
        });
        if cooperative {
            proactor.coop_taskrun(true).taskrun_flag(true);
        }
        compio::runtime::RuntimeBuilder::new()
            .with_proactor(proactor)
            .build()
    };
    let built = match plan.driver {
        // EINVAL: a kernel that does not know the flags; any other error is the ring's own.
        IoDriver::IoUring => match build(true) {
            Err(error) if error.raw_os_error() == Some(libc::EINVAL) => build(false),
            built => built,
        },
        IoDriver::Polling => build(false),
    };
    built.map_err(|error| match plan.driver {
            IoDriver::IoUring => format!(
                "cannot start an io_uring runtime: {}. Check that RLIMIT_MEMLOCK is not too low (each shard's ring \
                 locks about 0.5 MiB), or set system.io_driver = \"polling\"",
                explain(&error)
            ),
            IoDriver::Polling => format!("cannot start the readiness-driver runtime: {error}"),
        })
}

/// The driver a built runtime runs on.
pub fn driver_of(runtime: &compio::runtime::Runtime) -> IoDriver {
    if runtime.driver_type().is_iouring() {
        IoDriver::IoUring
    } else {
        IoDriver::Polling
    }
}

#[allow(clippy::disallowed_methods, reason = "tests")]
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_readiness_driver_serves_files_with_o_direct() {
        // The fallback must keep the storage contract: O_DIRECT aligned writes and reads work on
        // the polling driver (compio runs them on its blocking pool).
        let plan = plan(IoDriverSetting::Polling).unwrap();
        let runtime = build_runtime(&plan).unwrap();
        assert_eq!(driver_of(&runtime), IoDriver::Polling);
        let dir = tempfile::tempdir().unwrap();
        runtime.block_on(async {
            use compio::io::{AsyncReadAtExt, AsyncWriteAtExt};
            use std::os::unix::fs::OpenOptionsExt as _;
            let path = dir.path().join("direct");
            let mut options = compio::fs::OpenOptions::new();
            options.create(true).read(true).write(true);
            // tmpfs refuses O_DIRECT: then the test still checks plain file I/O on the driver.
            let direct = {
                let mut std_options = std::fs::OpenOptions::new();
                std_options
                    .create(true)
                    .truncate(true)
                    .write(true)
                    .custom_flags(libc::O_DIRECT);
                std_options.open(&path).is_ok()
            };
            if direct {
                options.custom_flags(libc::O_DIRECT);
            }
            let file = options.open(&path).await.unwrap();
            let mut buffer = crate::storage::AlignedBuf::zeroed(4096);
            buffer.append(&[7u8; 4096]);
            let mut writer = &file;
            let compio::BufResult(written, _) = writer.write_all_at(buffer, 0).await;
            written.unwrap();
            let into = crate::storage::AlignedBuf::zeroed(4096);
            let compio::BufResult(read, back) = file.read_exact_at(into, 0).await;
            read.unwrap();
            assert_eq!(back.len(), 4096);
            assert!(back.as_slice().iter().all(|&byte| byte == 7));
        });
    }

    #[test]
    fn auto_uses_io_uring_where_the_kernel_allows_it() {
        let plan = plan(IoDriverSetting::Auto).unwrap();
        match probe_io_uring() {
            Ok(()) => assert_eq!((plan.driver, plan.fallback), (IoDriver::IoUring, None)),
            Err(reason) => {
                assert_eq!(plan.driver, IoDriver::Polling);
                let warning = plan.fallback.unwrap();
                assert!(warning.contains(&reason) && warning.contains("seccomp-io-uring.json"));
            }
        }
    }

    #[test]
    fn a_cooperative_ring_completes_what_other_threads_finish_while_it_waits_or_runs() {
        // The ring is set up with COOP_TASKRUN: completions from other cores wait for the shard's
        // next entry into the kernel. A socket filled by another thread must still complete,
        // whether the shard sleeps in the kernel or is busy running tasks when the data comes.
        let Ok(plan) = plan(IoDriverSetting::IoUring) else {
            return; // no io_uring here: the readiness driver's test above covers the fallback
        };
        let runtime = build_runtime(&plan).unwrap();
        assert_eq!(driver_of(&runtime), IoDriver::IoUring);
        runtime.block_on(async {
            use compio::io::AsyncReadExt;
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let address = listener.local_addr().unwrap();
            let writer = std::thread::spawn(move || {
                use std::io::Write;
                let (mut socket, _) = listener.accept().unwrap();
                for round in 0..2u8 {
                    std::thread::sleep(std::time::Duration::from_millis(30));
                    socket.write_all(&[round; 1000]).unwrap();
                }
            });
            let mut stream = compio::net::TcpStream::connect(address).await.unwrap();
            // Round 0 arrives while the shard sleeps in the kernel.
            let compio::BufResult(read, first) = stream.read_exact(vec![9u8; 1000]).await;
            read.unwrap();
            assert!(first.iter().all(|&byte| byte == 0));
            // Round 1 arrives while another task keeps the shard busy in user space.
            let busy = compio::runtime::spawn(async {
                let until = std::time::Instant::now() + std::time::Duration::from_millis(100);
                while std::time::Instant::now() < until {
                    std::hint::spin_loop();
                }
            });
            let compio::BufResult(read, second) = stream.read_exact(vec![9u8; 1000]).await;
            read.unwrap();
            assert!(second.iter().all(|&byte| byte == 1));
            busy.await.unwrap();
            writer.join().unwrap();
        });
    }
}
