//! Timing of gp::fit pieces (development aid).
use engine::gp::{self, Data, GpConfig};
use engine::testfunctions::TestFunction;
use rand::{Rng, SeedableRng, rngs::StdRng};

fn main() {
    let args: Vec<usize> = std::env::args().skip(1).map(|s| s.parse().unwrap()).collect();
    let (n, d) = (args.first().copied().unwrap_or(100), args.get(1).copied().unwrap_or(6));
    let f = TestFunction::levy(d);
    let mut rng = StdRng::seed_from_u64(1);
    let x: Vec<f64> = (0..n * d).map(|_| rng.random::<f64>()).collect();
    let y: Vec<f64> = x.chunks(d).map(|u| -f.eval_unit(u)).collect();
    let data = Data::new(d, x, y);
    let mut config = GpConfig::default_for(d);
    for restarts in [0, 1] {
        config.restarts = restarts;
        let t = std::time::Instant::now();
        let (gp, rep) = gp::fit(&data, &config, None, 0).unwrap();
        println!("cold restarts={restarts}: {:.1} ms, {:?}", t.elapsed().as_secs_f64() * 1e3, rep);
        let warm = gp.hyperparameters().clone();
        let t = std::time::Instant::now();
        let (_, rep) = gp::fit(&data, &config, Some(&warm), 0).unwrap();
        println!("warm restarts={restarts}: {:.1} ms, {:?}", t.elapsed().as_secs_f64() * 1e3, rep);
    }
    let h = gp::fit(&data, &config, None, 0).unwrap().0.hyperparameters().clone();
    let t = std::time::Instant::now();
    for _ in 0..100 {
        let _ = gp::log_marginal_likelihood(&data, &config, &h).unwrap();
    }
    println!("one lml+grad: {:.3} ms", t.elapsed().as_secs_f64() * 10.0);
    let t = std::time::Instant::now();
    for _ in 0..100 {
        let _ = config.kernel.gram(&h.theta, &data.x);
    }
    println!("one gram: {:.3} ms", t.elapsed().as_secs_f64() * 10.0);
    let mut k = config.kernel.gram(&h.theta, &data.x);
    for i in 0..n {
        k[(i, i)] += 1e-3;
    }
    let t = std::time::Instant::now();
    for _ in 0..100 {
        let _ = engine::linalg::Cholesky::factor(k.clone()).unwrap();
    }
    println!("one cholesky: {:.3} ms", t.elapsed().as_secs_f64() * 10.0);
    let c = engine::linalg::Cholesky::factor(k.clone()).unwrap();
    let t = std::time::Instant::now();
    for _ in 0..100 {
        let _ = c.inverse();
    }
    println!("one inverse: {:.3} ms", t.elapsed().as_secs_f64() * 10.0);
    let w = c.inverse();
    let t = std::time::Instant::now();
    for _ in 0..100 {
        let _ = config.kernel.contract_grad(&h.theta, &data.x, &w);
    }
    println!("one contract: {:.3} ms", t.elapsed().as_secs_f64() * 10.0);
}
