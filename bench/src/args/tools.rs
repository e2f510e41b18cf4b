//! The tools beside the benchmarks: `baseline`, `compare` and the loopback sink.

use crate::plan::DEFAULT_OUTPUT_DIR;
use crate::units::ByteSize;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug, Clone)]
pub struct BaselineArgs {
    /// Directory on the disk to measure (default: $IGGY_SYSTEM_PATH or ./local_data)
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Bytes written then read with O_DIRECT
    #[arg(long, default_value = "1GiB")]
    pub disk_size: ByteSize,
    /// Size of each O_DIRECT write and read
    #[arg(long, default_value = "1MiB")]
    pub block_size: ByteSize,
    /// Bytes sent over each loopback connection
    #[arg(long, default_value = "2GiB")]
    pub loopback_size: ByteSize,
    /// Where to save the baseline JSON (default: <output dir>/baseline.json)
    #[arg(long)]
    pub save: Option<PathBuf>,
    /// Parent directory of the default save path
    #[arg(long, short = 'o', default_value = DEFAULT_OUTPUT_DIR)]
    pub output_dir: PathBuf,
    /// Skip the disk measurement
    #[arg(long)]
    pub no_disk: bool,
    /// Skip the loopback measurement
    #[arg(long)]
    pub no_loopback: bool,
}

#[derive(Args, Debug, Clone)]
pub struct CompareArgs {
    /// Address of server A
    #[arg(long)]
    pub a: String,
    /// Address of server B
    #[arg(long)]
    pub b: String,
    /// Rounds (each runs A then B)
    #[arg(long, default_value_t = 3)]
    pub rounds: u32,
    /// Pid of server A (RSS and CPU)
    #[arg(long)]
    pub a_pid: Option<u32>,
    /// Pid of server B (RSS and CPU)
    #[arg(long)]
    pub b_pid: Option<u32>,
    /// Protocol generation A is driven with (default: the workload's --protocol); with
    /// --b-protocol and --a = --b, compares the 0.8 and 0.9 paths of one server
    #[arg(long, value_parser = super::parse_protocol)]
    pub a_protocol: Option<rill_sdk::Protocol>,
    /// Protocol generation B is driven with (default: the workload's --protocol)
    #[arg(long, value_parser = super::parse_protocol)]
    pub b_protocol: Option<rill_sdk::Protocol>,
    /// Label of server A in the output
    #[arg(long, default_value = "A")]
    pub a_name: String,
    /// Label of server B in the output
    #[arg(long, default_value = "B")]
    pub b_name: String,
    /// Parent directory of the comparison's results directory
    #[arg(long, short = 'o', default_value = DEFAULT_OUTPUT_DIR)]
    pub output_dir: PathBuf,
    /// The workload: the usual command line without the program name, e.g.
    /// `-- -T 1GB pinned-producer -p 2 tcp` (its --server-address is replaced by --a / --b)
    #[arg(last = true, required = true, num_args = 1..)]
    pub workload: Vec<String>,
}

#[derive(Args, Debug, Clone)]
pub struct LoopbackSinkArgs {
    /// Address of the parent's listener
    #[arg(long)]
    pub connect: String,
    /// Connections to open
    #[arg(long, default_value_t = 1)]
    pub connections: usize,
}
