"""The call side: how a kernel's ``outs`` become the result types of an XLA custom call."""
