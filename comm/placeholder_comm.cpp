// placeholder: replaced by the comm owner
