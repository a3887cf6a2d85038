//! How a staged copy-out's threads are dispatched, on the host alone (issue 53): the GPU layer
//! copies each write-back from a pinned staging buffer into the program's output on a kept rayon
//! pool (`pool.scope` from the copy-out thread); the copy-out probe (`copyout.cu`), whose chain
//! ran about twice as fast as calibration's staged phase, wakes kept threads through a condition
//! variable. Per tile (8 MiB: 1024 x 1024 f64 into a 4096-row output; 32 MiB: 2048 x 2048), the
//! median seconds of one copy-out, split into one part per MiB as the GPU layer splits it, over
//! 16 copies back to back into a touched 128 MiB output, for: rayon's scope, rayon's broadcast,
//! a condition-variable pool, and threads started per copy. Not part of the library.
//!
//!   copy_pool [ROUNDS]   (default 5)

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

const ORDER: usize = 4096;

/// Copies columns `[c0, c1)` of a packed `rows`-row tile into the output at `(0, col0)`.
fn copy_cols(src: &[f64], rows: usize, dst: *mut f64, col0: usize, c0: usize, c1: usize) {
    for j in c0..c1 {
        let from = &src[j * rows..(j + 1) * rows];
        // SAFETY: column `col0 + j` of the ORDER x ORDER output holds `rows` <= ORDER values
        // from its start; parts copy disjoint columns.
        unsafe { std::ptr::copy_nonoverlapping(from.as_ptr(), dst.add((col0 + j) * ORDER), rows) };
    }
}

/// A pointer the parts share (each writes its own columns).
#[derive(Clone, Copy)]
struct Out(*mut f64);
impl Out {
    /// The pointer (a method, so that closures capture the whole `Out`, which is `Send`).
    fn get(self) -> *mut f64 {
        self.0
    }
}

// SAFETY: the parts write disjoint columns, and the copy returns after all of them.
unsafe impl Send for Out {}
// SAFETY: as above.
unsafe impl Sync for Out {}

/// Kept threads woken per copy through a condition variable (the probe's way).
struct CondvarPool {
    state: Mutex<(u64, Option<Arc<Job>>)>,
    wake: Condvar,
}

struct Job {
    run: Box<dyn Fn(usize) + Send + Sync>,
    parts: usize,
    next: AtomicUsize,
    left: Mutex<usize>,
    done: Condvar,
}

impl Job {
    fn work(&self) {
        loop {
            let p = self.next.fetch_add(1, Ordering::AcqRel);
            if p >= self.parts {
                return;
            }
            (self.run)(p);
            let mut left = self.left.lock().unwrap();
            *left -= 1;
            if *left == 0 {
                self.done.notify_all();
            }
        }
    }
}

impl CondvarPool {
    fn new(threads: usize) -> Arc<Self> {
        let pool = Arc::new(CondvarPool {
            state: Mutex::new((0, None)),
            wake: Condvar::new(),
        });
        for _ in 0..threads {
            let p = pool.clone();
            std::thread::spawn(move || {
                let mut seen = 0;
                loop {
                    let job = {
                        let mut st = p.state.lock().unwrap();
                        while st.0 == seen {
                            st = p.wake.wait(st).unwrap();
                        }
                        seen = st.0;
                        st.1.clone()
                    };
                    if let Some(j) = job {
                        j.work();
                    }
                }
            });
        }
        pool
    }

    fn run(&self, parts: usize, f: Box<dyn Fn(usize) + Send + Sync>) {
        let job = Arc::new(Job {
            run: f,
            parts,
            next: AtomicUsize::new(0),
            left: Mutex::new(parts),
            done: Condvar::new(),
        });
        {
            let mut st = self.state.lock().unwrap();
            st.0 += 1;
            st.1 = Some(job.clone());
        }
        self.wake.notify_all();
        let mut left = job.left.lock().unwrap();
        while *left > 0 {
            left = job.done.wait(left).unwrap();
        }
    }
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let rayon = rayon::ThreadPoolBuilder::new()
        .num_threads(cores)
        .build()
        .expect("rayon pool");
    let condvar = CondvarPool::new(cores);
    let mut out = vec![1.0f64; ORDER * ORDER];
    let dst = Out(out.as_mut_ptr());
    println!("copy-outs into a touched {ORDER}^2 f64 output, {cores} cores, median ms per copy-out (16 in a row), {rounds} rounds");
    println!(
        "| tile | MiB | parts | rayon scope | rayon broadcast | condvar pool | threads per copy |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for side in [1024usize, 2048] {
        let src: Arc<Vec<f64>> = Arc::new((0..side * side).map(|i| i as f64).collect());
        let bytes = side * side * 8;
        let parts = cores.min(bytes >> 20).min(side);
        let per = side.div_ceil(parts);
        let tiles = (ORDER / side) * (ORDER / side);
        let mut cells = Vec::new();
        for variant in 0..4 {
            let mut times = Vec::new();
            for _ in 0..rounds {
                for t in 0..tiles {
                    let col0 = (t / (ORDER / side)) * side;
                    let row0 = (t % (ORDER / side)) * side;
                    let d = Out(dst.0.wrapping_add(row0));
                    let s = src.clone();
                    let part = move |p: usize| {
                        let (c0, c1) = (p * per, ((p + 1) * per).min(side));
                        copy_cols(&s, side, d.get(), col0, c0, c1);
                    };
                    let start = Instant::now();
                    match variant {
                        0 => rayon.scope(|sc| {
                            for p in 0..parts {
                                let part = &part;
                                sc.spawn(move |_| part(p));
                            }
                        }),
                        1 => {
                            rayon.broadcast(|ctx| {
                                let mut p = ctx.index();
                                while p < parts {
                                    part(p);
                                    p += ctx.num_threads();
                                }
                            });
                        }
                        2 => condvar.run(parts, Box::new(part)),
                        _ => std::thread::scope(|sc| {
                            for p in 0..parts {
                                let part = &part;
                                sc.spawn(move || part(p));
                            }
                        }),
                    }
                    times.push(start.elapsed().as_secs_f64());
                    // A write-back's spacing in a call: the next DMA.
                    std::thread::sleep(std::time::Duration::from_micros(200));
                }
            }
            times.sort_by(f64::total_cmp);
            cells.push(format!("{:.3}", times[times.len() / 2] * 1e3));
        }
        println!(
            "| {side} | {} | {parts} | {} |",
            bytes >> 20,
            cells.join(" | ")
        );
    }
    // Checked: the last tiles written (2048 x 2048) hold their source's values.
    let side = 2048;
    let ok = (0..ORDER).step_by(97).all(|j| {
        (0..ORDER)
            .step_by(89)
            .all(|i| out[j * ORDER + i] == ((j % side) * side + i % side) as f64)
    });
    println!("check: {}", if ok { "ok" } else { "WRONG" });
    if !ok {
        std::process::exit(1);
    }
}
