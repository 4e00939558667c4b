//! Cost of the cgroup work a launcher does per container: creating a
//! nested cgroup, and destroying a pod of 100 nested containers (freeze,
//! kill, rmdir bottom-up in every hierarchy). Needs root; prints a note and
//! measures nothing otherwise.

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use nestguard::container_id::parse_dotted;
use nestguard::isolation::cgroups::{Cgroups, CgroupsConfig, ContainerProcesses, CreateOptions};
use nestguard::proto::mesos::ContainerId;

fn id(dotted: &str) -> ContainerId {
    parse_dotted(dotted).expect("valid id")
}

struct Cleanup(Cgroups);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = self.0.destroy_all();
    }
}

fn bench(c: &mut Criterion) {
    if !rustix::process::geteuid().is_root() {
        eprintln!("cgroups benchmarks need root; skipped");
        return;
    }
    let cg = Cgroups::new(CgroupsConfig {
        cgroups_root: format!("nestguard-bench-{}", std::process::id()).into(),
        ..CgroupsConfig::default()
    })
    .expect("cgroups");
    let guard = Cleanup(cg);
    let cg = &guard.0;
    let pod = id("pod");
    let mut group = c.benchmark_group("cgroups");
    group
        .measurement_time(Duration::from_secs(2))
        .sample_size(10);

    group.bench_function("create+destroy nested container", |b| {
        cg.create(&pod, &CreateOptions::default()).expect("pod");
        let task = id("pod.task");
        b.iter(|| {
            cg.create(black_box(&task), &CreateOptions::default())
                .expect("create");
            cg.destroy(&task).expect("destroy");
        });
        cg.destroy(&pod).expect("destroy pod");
    });

    group.bench_function("destroy pod of 100 nested containers", |b| {
        b.iter_batched(
            || {
                cg.create(&pod, &CreateOptions::default()).expect("pod");
                for i in 0..100 {
                    cg.create(&id(&format!("pod.c{i}")), &CreateOptions::default())
                        .expect("child");
                }
            },
            |()| cg.destroy(&pod).expect("destroy"),
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
