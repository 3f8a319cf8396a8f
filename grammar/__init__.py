"""The ImageCL grammar (imagecl.lark), shipped as package data."""
