//! Criterion micro-benchmarks of single calls of the Rust API on a 1-PE instance of the
//! simulator: put and get of 8 bytes, `p`/`g`, the remote atomics, and switching CANN's active
//! instance. One PE means the peer is this process, so these measure the library's own path
//! (validation, dispatch, the copy or the atomic), not a cross-core transfer; `shmem-bench`
//! measures that beside Open MPI's OpenSHMEM.
//!
//! ```text
//! cargo bench -p shmem-benches --bench calls
//! ```

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use shmem::{Attributes, Instance};
use shmem_capi::cann;

/// A base port for this run's bootstrap servers (instance `id` listens on `base + id`).
fn base_port() -> u16 {
    30000 + (std::process::id() % 10000) as u16 * 2
}

fn attrs(id: u64) -> Attributes {
    let base = base_port();
    let mut a = Attributes::new(0, 1, &format!("tcp://127.0.0.1:{base}"), 2 << 20);
    if id != 0 {
        a.ip_port = "tcp://127.0.0.1:0".into();
        a.instance_id = id;
        a.port_range = Some(format!("{}:{}", base, base + 8));
    }
    a
}

fn calls(c: &mut Criterion) {
    let inst = Instance::init(&attrs(0)).expect("init");
    let buf = inst.calloc::<i64>(1).expect("calloc");
    let (v, e) = (buf.as_slice(), buf.elem(0));
    let mut x = [0i64];
    c.bench_function("put 8 B", |b| b.iter(|| v.put(black_box(&[1]), 0).unwrap()));
    c.bench_function("get 8 B", |b| b.iter(|| v.get(&mut x, 0).unwrap()));
    c.bench_function("p i64", |b| b.iter(|| v.p(0, black_box(2), 0).unwrap()));
    c.bench_function("g i64", |b| b.iter(|| black_box(v.g(0, 0).unwrap())));
    c.bench_function("atomic_fetch_add i64", |b| {
        b.iter(|| black_box(e.atomic_fetch_add(1, 0).unwrap()))
    });
    c.bench_function("atomic_compare_swap i64", |b| {
        b.iter(|| black_box(e.atomic_compare_swap(0, 1, 0).unwrap()))
    });
    c.bench_function("atomic_add i64", |b| b.iter(|| e.atomic_add(1, 0).unwrap()));
    buf.free().expect("free");
    inst.finalize().expect("finalize");
}

fn switch(c: &mut Criterion) {
    cann::init_attr(cann::INIT_WITH_DEFAULT, &attrs(1)).expect("instance 1");
    cann::init_attr(cann::INIT_WITH_DEFAULT, &attrs(2)).expect("instance 2");
    let mut k = 0u64;
    c.bench_function("switch the active instance", |b| {
        b.iter(|| {
            k += 1;
            cann::instance_ctx_set(1 + (k & 1)).unwrap()
        })
    });
    cann::finalize_instance(1).expect("finalize 1");
    cann::finalize_instance(2).expect("finalize 2");
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = calls, switch
}
criterion_main!(benches);
