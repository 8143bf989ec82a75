/// The argument classes of the generated bad-input calls (issue 14): included by the generator
/// (`conformance/build.rs`), which writes `Class::…`, and by the case that runs the calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Class {
    /// A PE number.
    Pe,
    /// A symmetric address or buffer.
    Address,
    /// A length, count, index or alignment.
    Size,
    /// A stride.
    Stride,
    /// A team, context or device event handle.
    Handle,
    /// The instance's state (finalized).
    State,
}
