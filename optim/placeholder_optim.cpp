// placeholder: replaced by the optim owner
