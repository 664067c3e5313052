"""One construct per concern; stacks compose them."""
