//! effectum 0.7 drain: enqueue N no-op jobs, then time a worker at concurrency 50 (its
//! defaults otherwise) until all finished.
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use effectum::{Error, Job, JobRunner, Queue, RunningJob, Worker};

#[derive(Debug)]
struct Ctx;

async fn noop(_job: RunningJob, _ctx: Arc<Ctx>) -> Result<(), Error> {
    Ok(())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args[1].parse().expect("n");
    let queue = Queue::new(&PathBuf::from(&args[2])).await?;
    let mut left = n;
    while left > 0 {
        let take = left.min(1000);
        let jobs: Vec<Job> = (0..take).map(|_| Job::builder("noop").build()).collect();
        queue.add_jobs(jobs).await?;
        left -= take;
    }
    let runner = JobRunner::builder("noop", noop).build();
    let start = Instant::now();
    let worker = Worker::builder(&queue, Arc::new(Ctx))
        .max_concurrency(50)
        .jobs([runner])
        .build()
        .await?;
    while (worker.counts().finished as usize) < n {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let secs = start.elapsed().as_secs_f64();
    println!("effectum drain {n} items: {:.0} items/s ({secs:.2} s)", n as f64 / secs);
    Ok(())
}
