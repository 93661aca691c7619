// placeholder: replaced by the data owner
