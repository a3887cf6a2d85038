//! `hetblas devices`

use clap::Args;
use hetblas::{Result, Runtime};

#[derive(Args, Debug)]
pub struct DevicesArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(rt: &Runtime, args: DevicesArgs) -> Result<()> {
    if args.json {
        let devices: Vec<_> = rt.devices().iter().map(|d| d.info().clone()).collect();
        let v = serde_json::json!({
            "devices": devices,
            "backends": rt.backends(),
            "profile": rt.profile_status(),
        });
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return Ok(());
    }
    println!("devices:");
    for (i, d) in rt.devices().iter().enumerate() {
        let info = d.info();
        println!(
            "  [{i}] {:<12} {:<9} {} ({:.1} GiB) - {}",
            info.label(),
            format!("{:?}", info.kind),
            info.name,
            info.memory_bytes as f64 / (1u64 << 30) as f64,
            info.detail
        );
    }
    println!("backends:");
    for s in rt.backends() {
        match &s.reason {
            None => println!("  {:<9} {} device(s)", s.backend, s.devices),
            Some(r) => println!("  {:<9} absent: {r}", s.backend),
        }
    }
    println!("model: {}", rt.profile_status());
    Ok(())
}
