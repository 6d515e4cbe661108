"""Running untrusted checker code: the static lambda sandbox (:mod:`.safe_eval`)."""

from redline.lve.sandbox.safe_eval import LambdaLimitError, SafeLambda, UnsafeLambdaError, compile_lambda

__all__ = ["LambdaLimitError", "SafeLambda", "UnsafeLambdaError", "compile_lambda"]
