// placeholder; the dplab command is built by its owner.
int main() { return 0; }
