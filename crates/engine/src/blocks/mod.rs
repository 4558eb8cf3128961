//! The structural blocks a study spec may add to plain optimisation, each owning its spec, validation and models:
//!
//! - [`control_sets`]: only some variables are set per run, at a cost (seed 000);
//! - [`indirect`]: only an aggregate of the function over p(x | a) is observed (seed 001);
//! - [`measurement`]: a finite candidate set, noise levels with costs, a cost model, a level set (seed 003);
//! - [`kernel_candidates`]: the kernel is one of several candidates (seed 004).
//!
//! Context parameters (seed 002) are a parameter role ([`crate::space::Role::Context`]), not a block; their model
//! is [`crate::kde`]. Blocks sit below [`crate::problem`], which validates them, and never see a policy.

pub mod control_sets;
pub mod indirect;
pub mod kernel_candidates;
pub mod measurement;
