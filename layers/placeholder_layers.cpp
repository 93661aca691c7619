// placeholder: replaced by the layers owner
