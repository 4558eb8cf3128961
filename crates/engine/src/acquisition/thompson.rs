//! Thompson sampling (Thompson 1933; for GPs e.g. Kandasamy et al., AISTATS 2018): maximise one posterior draw,
//! here a pathwise function sample ([`crate::gp::PathwiseSample`]) that is smooth and has gradients.

use super::Acquisition;
use crate::gp::{ExpectedDraw, PathwiseSample};

/// One posterior function draw as an acquisition.
#[derive(Debug, Clone)]
pub struct ThompsonSample {
    sample: PathwiseSample,
    d: usize,
}

impl ThompsonSample {
    /// Wraps a draw over a `d`-dimensional input.
    pub fn new(sample: PathwiseSample, d: usize) -> Self {
        Self { sample, d }
    }
}

impl Acquisition for ThompsonSample {
    fn dim(&self) -> usize {
        self.d
    }

    fn value(&self, x: &[f64]) -> f64 {
        self.sample.value(x)
    }

    fn value_and_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        self.sample.value_and_grad(x, grad)
    }
}

/// A draw's expectation over fixed samples of some inputs ([`ExpectedDraw`], `ts-psq` over control sets).
impl Acquisition for ExpectedDraw<'_> {
    fn dim(&self) -> usize {
        ExpectedDraw::dim(self)
    }

    fn value(&self, x: &[f64]) -> f64 {
        self.evaluate(x, None)
    }

    fn value_and_grad(&self, x: &[f64], grad: &mut [f64]) -> f64 {
        self.evaluate(x, Some(grad))
    }
}
