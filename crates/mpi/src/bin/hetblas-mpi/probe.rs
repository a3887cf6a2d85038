//! `hetblas-mpi pingpong` and `hetblas-mpi bcast`: what the network between ranks moves.

use crate::Res;
use clap::Args;
use hetblas_mpi::{NetworkLink, Transport};
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct BcastArgs {
    /// Message sizes in MiB.
    #[arg(long, value_delimiter = ',', default_value = "256,512,1024")]
    pub mib: Vec<usize>,
    /// Transports: ibcast, chain (64 MiB chunks), chain:MIB.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "ibcast,chain:64,chain:16"
    )]
    pub transports: Vec<Transport>,
    /// Timed repetitions after a warm-up; the median is reported.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    pub reps: u64,
    /// Sleep this many microseconds between tests of the requests (default: yield, as SUMMA
    /// polls).
    #[arg(long)]
    pub nap_us: Option<u64>,
}

/// Ping-pong between ranks 0 and 1 over message sizes 8 B .. 64 MiB; fits latency and
/// bandwidth (least squares on the one-way times) and prints them as a [`NetworkLink`].
pub fn pingpong(world: &SimpleCommunicator) -> Res {
    if world.size() < 2 {
        return Err("pingpong needs two ranks".into());
    }
    let rank = world.rank();
    let mut points = Vec::new();
    for shift in (3..=26).step_by(1) {
        let bytes = 1usize << shift;
        let mut buf = vec![0u8; bytes];
        let reps = if bytes < 1 << 20 { 50 } else { 5 };
        world.barrier();
        let t = Instant::now();
        for _ in 0..reps {
            if rank == 0 {
                world.process_at_rank(1).send(&buf[..]);
                world.process_at_rank(1).receive_into(&mut buf[..]);
            } else if rank == 1 {
                world.process_at_rank(0).receive_into(&mut buf[..]);
                world.process_at_rank(0).send(&buf[..]);
            }
        }
        points.push((bytes as f64, t.elapsed().as_secs_f64() / reps as f64 / 2.0));
    }
    if rank == 0 {
        let n = points.len() as f64;
        let (sx, sy) = points
            .iter()
            .fold((0.0, 0.0), |(a, b), p| (a + p.0, b + p.1));
        let (mx, my) = (sx / n, sy / n);
        let (mut sxy, mut sxx) = (0.0, 0.0);
        for &(x, y) in &points {
            sxy += (x - mx) * (y - my);
            sxx += (x - mx) * (x - mx);
        }
        let slope = sxy / sxx;
        let link = NetworkLink {
            latency_s: points[0].1,
            bandwidth: 1.0 / slope,
        };
        for (b, t) in &points {
            println!(
                "{:>10} B  {:>10.2} us  {:>8.2} GB/s",
                b,
                t * 1e6,
                b / t / 1e9
            );
        }
        println!("{link:?}");
    }
    Ok(())
}

/// Broadcast bandwidth from rank 0 to the others, per message size and transport, polled as
/// SUMMA polls (yielding, or sleeping `--nap-us` between tests): the median of `--reps` after a
/// warm-up, as bytes per second of the message.
pub fn bcast(world: &SimpleCommunicator, a: &BcastArgs) -> Res {
    let (sizes, transports, reps) = (&a.mib, &a.transports, a.reps);
    let nap = a.nap_us.map(std::time::Duration::from_micros);
    for &mib in sizes {
        let mut buf = vec![0.0f64; (mib << 20) / 8];
        if world.rank() == 0 {
            buf.iter_mut().enumerate().for_each(|(i, x)| *x = i as f64);
        }
        for &t in transports {
            if world.rank() != 0 {
                buf.fill(0.0);
            }
            let mut times = Vec::new();
            for r in 0..=reps {
                world.barrier();
                let t0 = Instant::now();
                hetblas_mpi::broadcast::broadcast(world, 0, &mut buf, t, nap);
                world.barrier();
                if r > 0 {
                    times.push(t0.elapsed().as_secs_f64());
                }
            }
            // The data arrived: the last element is what rank 0 wrote.
            let last = buf.len() - 1;
            if buf[last] != last as f64 {
                return Err(format!("{t:?}: rank {} got wrong data", world.rank()));
            }
            times.sort_by(f64::total_cmp);
            let med = times[times.len() / 2];
            if world.rank() == 0 {
                println!(
                    "bcast,{},{mib},{t:?},{},{med:.4},{:.2}",
                    world.size(),
                    nap.map_or("yield".to_string(), |d| format!("sleep{}us", d.as_micros())),
                    (mib << 20) as f64 / med / 1e9
                );
            }
        }
    }
    Ok(())
}
