// placeholder: replaced by the models owner
