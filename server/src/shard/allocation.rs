//! Which CPUs get a shard: `[system.sharding] cpu_allocation` in upstream's forms, resolved
//! against the CPUs this process may run on, plus thread pinning.
//!
//! | value | shards |
//! |---|---|
//! | `all` | one per allowed CPU |
//! | `N` | N shards; shard i runs on allowed CPU i mod count (N may exceed the CPU count) |
//! | `a..b` | one per CPU a, a+1, ..., b-1 |
//! | `numa:auto` | one per physical core (lowest hyperthread) of every NUMA node |
//! | `numa:nodes=0,1;cores=4;no_ht=true` | `cores` per listed node (0 = all), hyperthreads skipped if `no_ht` |

use hwlocality::Topology;
use hwlocality::object::types::ObjectType;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuAllocation {
    All,
    Count(usize),
    Range(usize, usize),
    Numa {
        nodes: Option<Vec<usize>>,
        cores_per_node: usize,
        no_ht: bool,
    },
}

/// Where one shard runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardPlacement {
    pub cpu: usize,
    /// Set when memory should be bound to this NUMA node (machines with several nodes).
    pub numa_node: Option<usize>,
}

impl std::str::FromStr for CpuAllocation {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("all") {
            return Ok(CpuAllocation::All);
        }
        if let Some(numa) = text.strip_prefix("numa:") {
            if numa == "auto" {
                return Ok(CpuAllocation::Numa {
                    nodes: None,
                    cores_per_node: 0,
                    no_ht: true,
                });
            }
            let mut nodes = None;
            let mut cores_per_node = 0;
            let mut no_ht = true;
            for part in numa.split(';').filter(|part| !part.is_empty()) {
                let (key, value) = part
                    .split_once('=')
                    .ok_or_else(|| format!("`{part}` is not key=value"))?;
                match key.trim() {
                    "nodes" => {
                        let list = value
                            .split(',')
                            .map(|node| {
                                node.trim()
                                    .parse::<usize>()
                                    .map_err(|_| format!("bad NUMA node `{node}`"))
                            })
                            .collect::<Result<Vec<_>, _>>()?;
                        nodes = Some(list);
                    }
                    "cores" => {
                        cores_per_node = value
                            .trim()
                            .parse()
                            .map_err(|_| format!("bad cores count `{value}`"))?
                    }
                    "no_ht" => {
                        no_ht = value
                            .trim()
                            .parse()
                            .map_err(|_| format!("bad no_ht `{value}` (true or false)"))?
                    }
                    other => {
                        return Err(format!(
                            "unknown NUMA setting `{other}` (nodes, cores, no_ht)"
                        ));
                    }
                }
            }
            return Ok(CpuAllocation::Numa {
                nodes,
                cores_per_node,
                no_ht,
            });
        }
        if let Some((start, end)) = text.split_once("..") {
            let start: usize = start
                .trim()
                .parse()
                .map_err(|_| format!("bad range start in `{text}`"))?;
            let end: usize = end
                .trim()
                .parse()
                .map_err(|_| format!("bad range end in `{text}`"))?;
            if start >= end {
                return Err(format!("range `{text}` is empty"));
            }
            return Ok(CpuAllocation::Range(start, end));
        }
        match text.parse::<usize>() {
            Ok(0) => Err("the shard count must be at least 1".into()),
            Ok(count) => Ok(CpuAllocation::Count(count)),
            Err(_) => Err(format!(
                "`{text}` is not all, a count, a range a..b or numa:..."
            )),
        }
    }
}

/// The CPUs this process may run on (its affinity mask, which honours cgroup cpusets).
pub fn allowed_cpus() -> Vec<usize> {
    match nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)) {
        Ok(set) => (0..nix::sched::CpuSet::count())
            .filter(|&cpu| set.is_set(cpu).unwrap_or(false))
            .collect(),
        Err(_) => (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect(),
    }
}

impl CpuAllocation {
    /// Resolves the allocation to one placement per shard.
    pub fn resolve(&self, allowed: &[usize]) -> Result<Vec<ShardPlacement>, String> {
        if allowed.is_empty() {
            return Err("no CPU is available to this process".into());
        }
        let plain = |cpu| ShardPlacement {
            cpu,
            numa_node: None,
        };
        match self {
            CpuAllocation::All => Ok(allowed.iter().copied().map(plain).collect()),
            CpuAllocation::Count(count) => Ok((0..*count)
                .map(|shard| plain(allowed[shard % allowed.len()]))
                .collect()),
            CpuAllocation::Range(start, end) => {
                let missing: Vec<_> = (*start..*end)
                    .filter(|cpu| !allowed.contains(cpu))
                    .collect();
                if !missing.is_empty() {
                    return Err(format!(
                        "CPUs {missing:?} of range {start}..{end} are not available to this process"
                    ));
                }
                Ok((*start..*end).map(plain).collect())
            }
            CpuAllocation::Numa {
                nodes,
                cores_per_node,
                no_ht,
            } => numa_placements(nodes.as_deref(), *cores_per_node, *no_ht, allowed),
        }
    }
}

fn numa_placements(
    wanted_nodes: Option<&[usize]>,
    cores_per_node: usize,
    no_ht: bool,
    allowed: &[usize],
) -> Result<Vec<ShardPlacement>, String> {
    let topology = Topology::new()
        .map_err(|error| format!("cannot read the CPU topology (hwloc): {error}"))?;
    let nodes: Vec<_> = topology.objects_with_type(ObjectType::NUMANode).collect();
    let several_nodes = nodes.len() > 1;
    let mut placements = Vec::new();
    for node in &nodes {
        let node_index = node.os_index().unwrap_or(0);
        if wanted_nodes.is_some_and(|wanted| !wanted.contains(&node_index)) {
            continue;
        }
        let Some(node_cpus) = node.cpuset() else {
            continue;
        };
        let mut cpus: Vec<usize> = if no_ht {
            // The lowest hardware thread of each core on this node.
            topology
                .objects_with_type(ObjectType::Core)
                .filter_map(|core| core.cpuset())
                .filter(|core_cpus| core_cpus.intersects(&*node_cpus))
                .filter_map(|core_cpus| core_cpus.first_set().map(usize::from))
                .collect()
        } else {
            node_cpus.iter_set().map(usize::from).collect()
        };
        cpus.retain(|cpu| allowed.contains(cpu));
        cpus.sort_unstable();
        cpus.dedup();
        let take = if cores_per_node == 0 {
            cpus.len()
        } else {
            cores_per_node
        };
        if cpus.len() < take {
            return Err(format!(
                "NUMA node {node_index} has {} usable CPUs, fewer than cores={take}",
                cpus.len()
            ));
        }
        placements.extend(cpus[..take].iter().map(|&cpu| ShardPlacement {
            cpu,
            numa_node: several_nodes.then_some(node_index),
        }));
    }
    if let Some(wanted) = wanted_nodes {
        for node in wanted {
            if !nodes
                .iter()
                .any(|candidate| candidate.os_index() == Some(*node))
            {
                return Err(format!("NUMA node {node} does not exist"));
            }
        }
    }
    if placements.is_empty() {
        return Err("the NUMA allocation selects no CPU".into());
    }
    Ok(placements)
}

/// Pins the calling thread to `placement.cpu`, and binds its memory to the NUMA node if one is
/// set. Failure to bind memory is reported, not fatal (it only costs locality).
pub fn pin_current_thread(placement: ShardPlacement) -> Result<(), String> {
    let mut set = nix::sched::CpuSet::new();
    set.set(placement.cpu)
        .map_err(|error| format!("CPU {} cannot be pinned: {error}", placement.cpu))?;
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set)
        .map_err(|error| format!("cannot pin to CPU {}: {error}", placement.cpu))?;
    if let Some(node) = placement.numa_node
        && let Err(error) = bind_memory_to_node(node)
    {
        // Needs CAP_SYS_NICE in containers; without it memory is merely not node-local.
        tracing::warn!(cpu = placement.cpu, node, %error, "cannot bind shard memory to its NUMA node; continuing");
    }
    Ok(())
}

fn bind_memory_to_node(node: usize) -> Result<(), String> {
    use hwlocality::memory::binding::{MemoryBindingFlags, MemoryBindingPolicy};
    let topology = Topology::new().map_err(|error| format!("hwloc: {error}"))?;
    let Some(object) = topology
        .objects_with_type(ObjectType::NUMANode)
        .find(|object| object.os_index() == Some(node))
    else {
        return Err(format!("NUMA node {node} not found"));
    };
    let Some(nodeset) = object.nodeset() else {
        return Err(format!("NUMA node {node} has no node set"));
    };
    topology
        .bind_memory(
            nodeset,
            MemoryBindingPolicy::Bind,
            MemoryBindingFlags::THREAD | MemoryBindingFlags::STRICT,
        )
        .map_err(|error| format!("cannot bind memory to NUMA node {node}: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_upstream_forms() {
        assert_eq!("all".parse(), Ok(CpuAllocation::All));
        assert_eq!("4".parse(), Ok(CpuAllocation::Count(4)));
        assert_eq!("2..4".parse(), Ok(CpuAllocation::Range(2, 4)));
        assert_eq!(
            "numa:auto".parse(),
            Ok(CpuAllocation::Numa {
                nodes: None,
                cores_per_node: 0,
                no_ht: true
            })
        );
        assert_eq!(
            "numa:nodes=0,1;cores=4;no_ht=false".parse(),
            Ok(CpuAllocation::Numa {
                nodes: Some(vec![0, 1]),
                cores_per_node: 4,
                no_ht: false
            })
        );
        for bad in ["0", "4..2", "lots", "numa:bogus=1", "numa:cores=x"] {
            assert!(bad.parse::<CpuAllocation>().is_err(), "{bad}");
        }
    }

    #[test]
    fn more_shards_than_cpus_wrap_around() {
        let placements = CpuAllocation::Count(4).resolve(&[0, 1]).unwrap();
        let cpus: Vec<_> = placements.iter().map(|p| p.cpu).collect();
        assert_eq!(cpus, [0, 1, 0, 1]);
        assert!(CpuAllocation::Range(0, 3).resolve(&[0, 1]).is_err());
        assert_eq!(CpuAllocation::All.resolve(&[0, 1]).unwrap().len(), 2);
    }

    #[test]
    fn numa_auto_finds_at_least_one_cpu_here() {
        let placements = CpuAllocation::Numa {
            nodes: None,
            cores_per_node: 0,
            no_ht: true,
        }
        .resolve(&allowed_cpus())
        .unwrap();
        assert!(!placements.is_empty());
        assert!(
            CpuAllocation::Numa {
                nodes: Some(vec![99]),
                cores_per_node: 0,
                no_ht: true
            }
            .resolve(&allowed_cpus())
            .is_err()
        );
    }
}
