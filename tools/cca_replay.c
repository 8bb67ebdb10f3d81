/* cca_replay.c - the cca-replay program: cca_replay_main (replay_main.c). */
int cca_replay_main(int argc, const char *const *argv);

int main(int argc, char **argv)
{
    return cca_replay_main(argc, (const char *const *)argv);
}
