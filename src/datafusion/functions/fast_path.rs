//! DataFusion functions with a faster path for the arguments that allow one.
//!
//! Some of DataFusion's list functions work row by row where a whole batch
//! can be done at once (`cardinality`, `array_concat`). [`FastPath`] keeps
//! such a function as it is (name, aliases, signature, types, coercion,
//! documentation) and tries a kernel of this crate first: the kernel takes
//! the arguments it can do, and every other call goes to DataFusion's
//! function, so the results are the same.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use arrow_schema::DataType;
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
};

/// A kernel for some arguments of a function: their result, or `None` for
/// arguments it leaves to DataFusion's function.
pub type Kernel = fn(&[ColumnarValue]) -> Result<Option<ColumnarValue>>;

/// DataFusion's function `inner`, with `kernel` tried first.
#[derive(Debug)]
pub struct FastPath {
    inner: Arc<ScalarUDF>,
    kernel: Kernel,
}

impl FastPath {
    pub fn new(inner: Arc<ScalarUDF>, kernel: Kernel) -> Self {
        Self { inner, kernel }
    }
}

/// One function whatever its kernel: the same name, signature and results.
impl PartialEq for FastPath {
    fn eq(&self, other: &Self) -> bool {
        self.inner == other.inner
    }
}

impl Eq for FastPath {}

impl Hash for FastPath {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.inner.hash(state);
    }
}

impl ScalarUDFImpl for FastPath {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        match (self.kernel)(&args.args)? {
            Some(result) => Ok(result),
            None => self.inner.invoke_with_args(args),
        }
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }
}
